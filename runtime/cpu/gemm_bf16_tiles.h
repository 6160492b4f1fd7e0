// What gemm_bf16's two sets of register tiles share: VDPBF16PS on bf16 pairs (gemm_bf16.cc), and
// on AVX-512 CPUs without AVX512_BF16 the same packed pairs widened to fp32 in registers
// (gemm_bf16_widen_avx512.cc). Where pack_a reads A (a row-major matrix, or a convolution's
// input gathered in place) and the next sliver's prefetch; the tile's finish in registers is
// gemm_tile_store_avx512.h, shared with the int8 tiles.
// Include after target_avx512_begin.h, as elementwise_math_avx512.h: it is compiled for AVX-512.
#pragma once

#ifndef CUVIL_AVX512_FILE
#error "gemm_bf16_tiles.h: include only after runtime/cpu/target_avx512_begin.h"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/elementwise_math_avx512.h"
#include "runtime/cpu/epilogue_lanes_avx512.h"
#include "runtime/cpu/gemm_bf16.h"
#include "runtime/cpu/gemm_loops.h"
#include "runtime/cpu/gemm_tile_store_avx512.h"

namespace cuvil::runtime::cpu::bf16_tiles {

using avx512::store_tile;
using avx512::TileFinish;

constexpr int MR = kBf16MR;
constexpr int NR = kBf16NR;
static_assert(NR == 32, "a sliver row of K pairs is two 16-lane vectors");

// A share of the next B sliver's panel, fetched into L2 one line per K step while a tile runs
// on the current one: the slivers of a panel lie a whole K apart, so each starts a new stream
// that the hardware prefetchers pick up late, and where weights come from memory (ResNet-50's
// layer4 reads 4.7 MB per convolution) the first tile of a sliver waited for them.
struct NextSliver {
  const char* at = nullptr;
  int64_t lines = 0;

  __attribute__((always_inline)) void step() {
    if (lines <= 0) return;
    _mm_prefetch(at, _MM_HINT_T1);
    at += 64;
    --lines;
  }
};

// How far ahead of a skinny product's B stream to prefetch: 2 KiB. Llama-3-8B decode at O3 went
// from 43.6-44.6 to 35.2-35.4 ms with it; 4 and 8 KiB measured the same (docs/performance.md).
constexpr int64_t kSkinnyPrefetchWords = 512;

// A skinny product's B sliver is one long sequential stream per thread: fetched ahead by hand,
// the four lines of two K pairs per step.
__attribute__((always_inline)) inline void prefetch_skinny_ahead(const uint32_t* pairs) {
  const char* ahead = reinterpret_cast<const char*>(pairs + kSkinnyPrefetchWords);
  _mm_prefetch(ahead, _MM_HINT_T0);
  _mm_prefetch(ahead + 64, _MM_HINT_T0);
  _mm_prefetch(ahead + 128, _MM_HINT_T0);
  _mm_prefetch(ahead + 192, _MM_HINT_T0);
}

// Row m of a skinny product's C at sliver s: the two accumulator sets acc[m][0, 1] and [2, 3]
// summed, stored (the sliver's valid columns), then bias and epilogue.
template <int M>
__attribute__((always_inline)) inline void store_skinny_rows(const Bf16Gemm& g, int64_t s,
                                                             __m512 (&acc)[M][4]) {
  const int64_t j0 = s * NR;
  const int64_t nr = std::min<int64_t>(NR, g.n - j0);
#pragma GCC unroll 4
  for (int m = 0; m < M; ++m) {
    alignas(64) float out[NR];
    _mm512_store_ps(out, _mm512_add_ps(acc[m][0], acc[m][2]));
    _mm512_store_ps(out + 16, _mm512_add_ps(acc[m][1], acc[m][3]));
    float* row = g.c + m * g.ldc + j0;
    std::copy(out, out + nr, row);
    finish_row(g, row, j0, nr);
  }
}

// Tiles of at most this many rows take two accumulator sets (2 x 2 x 5 = 20 registers): a tile
// of few rows has too few independent chains of products to hide their latency with one.
constexpr int kTwoSetRows = 5;

// Where pack_a reads rows of A: a row-major matrix. A Rows type gives, for row i of the current
// sliver (begin_sliver) and half h of the 32 floats at K index kk (begin_k), those 16 floats
// (lanes outside `valid` zero).
struct DenseRows {
  const float* a;
  int64_t lda;
  const float* sliver = nullptr;
  int64_t kk = 0;

  void begin_sliver(int64_t r0, int64_t) { sliver = a + r0 * lda; }
  void begin_k(int64_t k, int64_t) { kk = k; }
  __attribute__((always_inline)) __m512 half(int i, int h, __mmask16 valid) const {
    return _mm512_maskz_loadu_ps(valid, sliver + i * lda + kk + 16 * h);
  }
};

// A as the im2col of an NHWC convolution's input, read in place (Bf16Gemm::im2col): row r is
// output pixel r (images one after another), K runs (kh, kw, c), taps in the padding read 0.
// The 16 floats of a half lie in one tap's channels unless c is not a multiple of 16 (they are
// then gathered one by one). Per row, the sliver keeps where its window starts and which of its
// taps lie inside the image, so that a half costs a bit test and a load.
struct ConvRows {
  static constexpr int64_t kMaxTaps = 64;  // taps of a window tracked in a row's bit mask

  const float* x;
  const ConvGeometry& g;
  int64_t row0;  // the GEMM's first row within A
  // Per row of the sliver: its window's top-left input pixel, that pixel's element offset in x
  // (it may lie in the padding), and the taps inside the image (bit ki * kw + kj).
  int64_t iy0[MR] = {}, ix0[MR] = {}, origin[MR] = {};
  uint64_t inside[MR] = {};
  // Per half: its tap (and that tap's row and column in the window, its first channel), its
  // offset from a window's origin, whether it crosses into the next tap.
  int64_t tap[2] = {}, offset[2] = {}, kk[2] = {}, tap_row[2] = {}, tap_col[2] = {},
          channel[2] = {};
  bool crosses[2] = {};
  int64_t k_end = 0;

  void begin_sliver(int64_t r0, int64_t rows) {
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t pixel = row0 + r0 + i;
      const int64_t n = pixel / (g.oh * g.ow), p = pixel % (g.oh * g.ow);
      iy0[i] = p / g.ow * g.sh - g.ph;
      ix0[i] = p % g.ow * g.sw - g.pw;
      origin[i] = ((n * g.h + iy0[i]) * g.w + ix0[i]) * g.c;
      // Taps in order ki * kw + kj, without a division per tap (this runs per sliver and panel).
      uint64_t bits = 0;
      int64_t t = 0;
      for (int64_t ki = 0; ki < g.kh && t < kMaxTaps; ++ki) {
        const int64_t iy = iy0[i] + ki;
        for (int64_t kj = 0; kj < g.kw && t < kMaxTaps; ++kj, ++t) {
          bits |= static_cast<uint64_t>(in_image(iy, ix0[i] + kj)) << t;
        }
      }
      inside[i] = bits;
    }
  }
  void begin_k(int64_t k, int64_t k1) {
    k_end = k1;
    for (int h = 0; h < 2; ++h) {
      kk[h] = k + 16 * h;
      tap[h] = kk[h] / g.c;
      channel[h] = kk[h] % g.c;
      tap_row[h] = tap[h] / g.kw;
      tap_col[h] = tap[h] % g.kw;
      offset[h] = (tap_row[h] * g.w + tap_col[h]) * g.c + channel[h];
      crosses[h] = channel[h] + 16 > g.c && kk[h] + (g.c - channel[h]) < k1;
    }
  }
  bool in_image(int64_t iy, int64_t ix) const { return iy >= 0 && iy < g.h && ix >= 0 && ix < g.w; }
  bool inside_image(int i, int64_t t) const {
    return in_image(iy0[i] + t / g.kw, ix0[i] + t % g.kw);
  }
  // dst[0, len) = row i's x at kernel row ki, from tap column col's channel first on (len <= 16).
  // A member, not a lambda: GCC does not give a lambda its enclosing function's target.
  void load_run(float* dst, int i, int64_t ki, int64_t len, int64_t col, int64_t first) const {
    const __mmask16 m = static_cast<__mmask16>((1u << len) - 1u);
    const float* src = x + (origin[i] + (ki * g.w + col) * g.c + first);
    _mm512_mask_storeu_ps(dst, m, _mm512_maskz_loadu_ps(m, src));
  }
  // A half that crosses taps (channels not a multiple of 16, or a panel that starts inside a
  // tap). The taps of one kernel row lie side by side in x (NHWC), so a run within a kernel row
  // whose taps are all inside the image is one masked load; a run that touches the padding is
  // loaded tap by tap. A 5 x 5 window on 24 channels: a half spans at most two taps.
  __m512 crossing_half(int i, int h, __mmask16 valid) const {
    alignas(64) float v[16] = {};
    int64_t t = tap[h], ki = tap_row[h], kj = tap_col[h], ch = channel[h];
    auto tap_inside = [&](int64_t tt, int64_t col) {
      return tt < kMaxTaps ? (inside[i] >> tt & 1u) != 0 : in_image(iy0[i] + ki, ix0[i] + col);
    };
    for (int64_t l = 0, k = kk[h]; l < 16 && k < k_end;) {
      const int64_t run = std::min({(g.kw - kj) * g.c - ch, 16 - l, k_end - k});
      const int64_t taps = (ch + run + g.c - 1) / g.c;
      bool all_inside = true;
      for (int64_t q = 0; q < taps && all_inside; ++q) all_inside = tap_inside(t + q, kj + q);
      if (all_inside) {
        load_run(v + l, i, ki, run, kj, ch);
      } else {
        for (int64_t q = 0, done = 0; q < taps; ++q) {
          const int64_t len = std::min(g.c - (q == 0 ? ch : 0), run - done);
          if (tap_inside(t + q, kj + q))
            load_run(v + l + done, i, ki, len, kj + q, q == 0 ? ch : 0);
          done += len;
        }
      }
      l += run;
      k += run;
      const int64_t end = kj * g.c + ch + run;  // within the kernel row
      t += end / g.c - kj;
      kj = end / g.c;
      ch = end % g.c;
      if (kj == g.kw) kj = 0, ++ki;
    }
    return _mm512_maskz_load_ps(valid, v);
  }
  __attribute__((always_inline)) __m512 half(int i, int h, __mmask16 valid) const {
    if (crosses[h]) return crossing_half(i, h, valid);
    const bool in = tap[h] < kMaxTaps ? (inside[i] >> tap[h] & 1u) != 0 : inside_image(i, tap[h]);
    if (valid == 0 || !in) return _mm512_setzero_ps();
    return _mm512_maskz_loadu_ps(valid, x + (origin[i] + offset[h]));  // origin may lie outside
  }
};

// ---- gemm_bf16_widen_avx512.cc: the tiles of an AVX-512 CPU without AVX512_BF16 ----
// B stays the packed bf16 pairs; each pair word is widened in registers (its even element by a
// 16-bit shift, its odd one by masking the low half) and multiplied in fp32 FMAs. A is packed as
// fp32, not rounded to bf16: the bf16 weights are the only reduced operand there.

// Rows [i0, i0 + rows) x columns [k0, k1) of g's A (dense, or g.im2col gathered in place) as
// MR-row fp32 slivers dst[sliver][k][i] of 2 kp elements each, zero past k1 and past `rows`.
void widen_pack_a(const Bf16Gemm& g, int64_t i0, int64_t rows, int64_t k0, int64_t k1, int64_t kp,
                  float* dst);
// A tile of `rows` rows (1..MR) of C (+)= the fp32 A sliver `a` x the bf16 B sliver `b` over kp
// K pairs, then as the VDPBF16PS tile: accumulate, finish, store.
void widen_tile(int rows, int64_t kp, const float* a, const uint32_t* b, float* c, int64_t ldc,
                bool accumulate, const TileFinish* finish, NextSliver next);
// Slivers [s0, s1) of C for a product of at most kBf16SkinnyRows rows, A read as it is (fp32).
void widen_skinny(const Bf16Gemm& g, int64_t s0, int64_t s1);

}  // namespace cuvil::runtime::cpu::bf16_tiles
