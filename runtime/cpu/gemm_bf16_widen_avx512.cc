// gemm_bf16 on an AVX-512 CPU without AVX512_BF16 (Skylake-SP, Cascade Lake, Ice Lake class): the
// packed bf16 weights are widened to fp32 in registers and multiplied with fp32 FMAs. The weights
// keep their half size in memory and cache, so products that stream them (decode) read half the
// bytes of fp32; compute-bound products pay two integer operations per B vector, shared by all
// rows of a tile. The reference of these tiles is the VDPBF16PS set (gemm_bf16.cc) and the
// tests' fp64 product; CUVIL_CPU_DISABLE=avx512_bf16 selects them on any AVX-512 CPU.
#include <algorithm>

#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/gemm_bf16.h"
#include "runtime/cpu/gemm_loops.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/register_rows.h"
#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/elementwise_math_avx512.h"
#include "runtime/cpu/gemm_bf16_tiles.h"
#include "runtime/cpu/transpose_avx512.h"

namespace cuvil::runtime::cpu::bf16_tiles {

namespace {

// A pair word's elements as fp32: the even one is its low half, the odd one its high half.
struct WidePair {
  __m512 even, odd;
};
__attribute__((always_inline)) inline WidePair widen(const uint32_t* words) {
  const __m512i w = _mm512_loadu_si512(words);
  return {
      _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)),
      _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xffff0000u))))};
}

// C[R, NR] (+)= A[R, 2 kp] x B[2 kp, NR]; A's sliver holds MR floats per K element. With S = 2,
// the odd elements' products go to a second accumulator set (few rows: more independent chains).
template <int R, int S>
void tile(int64_t kp, const float* a, const uint32_t* b, float* c, int64_t ldc, bool accumulate,
          const TileFinish* finish, NextSliver next) {
  static_assert(R >= 1 && R <= MR && (S == 1 || S == 2), "a tile of 1..MR rows, 1 or 2 sets");
  __m512 acc[R][2], odd[R][2];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) {
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    if constexpr (S == 2) odd[i][0] = odd[i][1] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kp; ++p) {
    const WidePair b0 = widen(b), b1 = widen(b + 16);
    _mm_prefetch(reinterpret_cast<const char*>(b + 8 * NR), _MM_HINT_T0);
    next.step();
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      const __m512 ae = _mm512_set1_ps(a[i]);
      const __m512 ao = _mm512_set1_ps(a[MR + i]);
      acc[i][0] = _mm512_fmadd_ps(ae, b0.even, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ae, b1.even, acc[i][1]);
      if constexpr (S == 2) {
        odd[i][0] = _mm512_fmadd_ps(ao, b0.odd, odd[i][0]);
        odd[i][1] = _mm512_fmadd_ps(ao, b1.odd, odd[i][1]);
      } else {
        acc[i][0] = _mm512_fmadd_ps(ao, b0.odd, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(ao, b1.odd, acc[i][1]);
      }
    }
    a += 2 * MR;
    b += NR;
  }
  if constexpr (S == 2) {
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      acc[i][0] = _mm512_add_ps(acc[i][0], odd[i][0]);
      acc[i][1] = _mm512_add_ps(acc[i][1], odd[i][1]);
    }
  }
  store_tile<R>(acc, c, ldc, accumulate, finish);
}

// As gemm_bf16.cc's pack_a, without the rounding: 16 rows x 16 K elements transposed in
// registers per store.
template <class Rows>
__attribute__((noinline)) void pack_a(Rows& src, int64_t rows, int64_t k0, int64_t k1, int64_t kp,
                                      float* dst) {
  static_assert(MR <= 16, "a sliver's rows are lanes of one vector");
  const int64_t len = k1 - k0;
  constexpr __mmask16 kRows = static_cast<__mmask16>((1u << MR) - 1u);
  for (int64_t r0 = 0; r0 < rows; r0 += MR) {
    const int64_t mr = std::min<int64_t>(MR, rows - r0);
    src.begin_sliver(r0, mr);
    float* d = dst + r0 * 2 * kp;
    for (int64_t e0 = 0; e0 < 2 * kp; e0 += 32) {
      src.begin_k(k0 + e0, k1);
      for (int h = 0; h < 2; ++h) {
        const int64_t first = e0 + 16 * h;  // this half's first K element in the panel
        const int64_t count = std::min<int64_t>(16, 2 * kp - first);
        if (count <= 0) break;
        const __mmask16 valid = avx512::first_lanes(std::max<int64_t>(0, len - first));
        __m512i r[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) {
          r[i] = i < mr ? _mm512_castps_si512(src.half(i, h, valid)) : _mm512_setzero_si512();
        }
        avx512::transpose16x16_epi32(r);
#pragma GCC unroll 16
        for (int e = 0; e < 16; ++e) {
          if (e < count) _mm512_mask_storeu_epi32(d + (first + e) * MR, kRows, r[e]);
        }
      }
    }
  }
}

// acc[m] (+)= A row m's K pair p x the sliver's pair p: even products in acc[m][0, 1], odd in
// acc[m][2, 3]. An odd K's last pair has no odd element in A (B's is zero there).
// A skinny product streams this many slivers at once per row of A (M rows: 4 / M streams).
constexpr int kSkinnyStreams = 4;

template <int M>
__attribute__((always_inline)) inline void skinny_pair(const Bf16Gemm& g, const uint32_t* b,
                                                       int64_t p, bool has_odd,
                                                       __m512 (&acc)[M][4]) {
  const WidePair b0 = widen(b + p * NR), b1 = widen(b + p * NR + 16);
#pragma GCC unroll 4
  for (int m = 0; m < M; ++m) {
    const float* a = g.a + m * g.lda + 2 * p;
    const __m512 ae = _mm512_set1_ps(a[0]);
    acc[m][0] = _mm512_fmadd_ps(ae, b0.even, acc[m][0]);
    acc[m][1] = _mm512_fmadd_ps(ae, b1.even, acc[m][1]);
    if (has_odd) {
      const __m512 ao = _mm512_set1_ps(a[1]);
      acc[m][2] = _mm512_fmadd_ps(ao, b0.odd, acc[m][2]);
      acc[m][3] = _mm512_fmadd_ps(ao, b1.odd, acc[m][3]);
    }
  }
}

// S slivers from sliver s, M rows of C: each packed sliver streamed once, two K pairs a step,
// the S streams side by side. Several streams per thread keep more lines in flight than one
// (the fp32 GEMV streams 8 weight rows at once for the same reason).
template <int M, int S>
__attribute__((always_inline)) inline void skinny_slivers(const Bf16Gemm& g, int64_t s) {
  const int64_t kp = ceil_div(g.k, 2), full = g.k / 2;  // full: pairs with both elements in A
  const uint32_t* b[S];
  __m512 acc[S][M][4];
#pragma GCC unroll 4
  for (int t = 0; t < S; ++t) {
    b[t] = g.b + (s + t) * kp * NR;
#pragma GCC unroll 4
    for (int m = 0; m < M; ++m) {
      acc[t][m][0] = acc[t][m][1] = acc[t][m][2] = acc[t][m][3] = _mm512_setzero_ps();
    }
  }
  int64_t p = 0;
  for (; p + 2 <= full; p += 2) {
#pragma GCC unroll 4
    for (int t = 0; t < S; ++t) prefetch_skinny_ahead(b[t] + p * NR);
#pragma GCC unroll 4
    for (int t = 0; t < S; ++t) skinny_pair<M>(g, b[t], p, true, acc[t]);
#pragma GCC unroll 4
    for (int t = 0; t < S; ++t) skinny_pair<M>(g, b[t], p + 1, true, acc[t]);
  }
  for (; p < kp; ++p) {
#pragma GCC unroll 4
    for (int t = 0; t < S; ++t) skinny_pair<M>(g, b[t], p, p < full, acc[t]);
  }
#pragma GCC unroll 4
  for (int t = 0; t < S; ++t) store_skinny_rows<M>(g, s + t, acc[t]);
}

// M rows of C over slivers [s0, s1): kSkinnyStreams / M slivers at a time (16 accumulators),
// the rest one by one.
template <int M>
void skinny(const Bf16Gemm& g, int64_t s0, int64_t s1) {
  constexpr int S = std::max(1, kSkinnyStreams / M);
  int64_t s = s0;
  for (; s + S <= s1; s += S) skinny_slivers<M, S>(g, s);
  for (; s < s1; ++s) skinny_slivers<M, 1>(g, s);
}

}  // namespace

void widen_pack_a(const Bf16Gemm& g, int64_t i0, int64_t rows, int64_t k0, int64_t k1, int64_t kp,
                  float* dst) {
  if (g.im2col) {
    ConvRows src{g.a, *g.im2col, i0};
    pack_a(src, rows, k0, k1, kp, dst);
  } else {
    DenseRows src{g.a + i0 * g.lda, g.lda};
    pack_a(src, rows, k0, k1, kp, dst);
  }
}

void widen_tile(int rows, int64_t kp, const float* a, const uint32_t* b, float* c, int64_t ldc,
                bool accumulate, const TileFinish* finish, NextSliver next) {
  with_rows<MR>(rows, [&](auto r) {
    constexpr int R = decltype(r)::value;
    tile<R, (R <= kTwoSetRows ? 2 : 1)>(kp, a, b, c, ldc, accumulate, finish, next);
  });
}

void widen_skinny(const Bf16Gemm& g, int64_t s0, int64_t s1) {
  switch (g.m) {
    case 1:
      return skinny<1>(g, s0, s1);
    case 2:
      return skinny<2>(g, s0, s1);
    case 3:
      return skinny<3>(g, s0, s1);
    default:
      return skinny<4>(g, s0, s1);
  }
}

}  // namespace cuvil::runtime::cpu::bf16_tiles

#include "runtime/cpu/target_end.h"
