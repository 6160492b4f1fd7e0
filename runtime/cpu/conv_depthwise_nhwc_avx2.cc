// AVX2 + FMA register tiles of conv2d.depthwise_nhwc (the driver and the portable tile are in
// conv_depthwise_nhwc.cc). This file alone is compiled for AVX2 (the target pragma below) and
// runs only when conv2d_depthwise_nhwc_isa() is avx2; headers come before the pragma, so that no
// inline code of theirs is compiled for it. A tile of MR pixels x NV vectors of 16 channels runs
// one vector at a time (2 * MR accumulators and two weight registers of the 16 ymm; the inputs
// are FMA memory operands), walking the window once per vector.
#include <cstdint>

#include "runtime/cpu/conv_depthwise_nhwc_tiles.h"
#include "runtime/cpu/register_tile.h"

#include "runtime/cpu/target_avx2_begin.h"

#include "runtime/cpu/elementwise_math_avx2.h"
#include "runtime/cpu/epilogue_lanes_avx2.h"

namespace cuvil::runtime::cpu::depthwise {

namespace {

constexpr int kHalf = 8;  // floats per ymm register

// The bias of a tile without one.
alignas(64) constexpr float kZeros[kLanes] = {};

// The epilogue (in registers) and the store of channels [v * 16, v * 16 + 16) of MR pixels.
template <int MR, bool kMasked>
__attribute__((always_inline)) inline void finish_vector(const TileArgs& t, int v, __m256i m_lo,
                                                         __m256i m_hi, __m256 (&lo)[MR],
                                                         __m256 (&hi)[MR]) {
  float* y = t.y + v * kLanes;
  if (t.epilogue) {
    const int64_t col = t.oc0 + v * kLanes;
    avx2::epilogue_lanes(*t.epilogue, lo, y, t.y_pix_stride, col, m_lo);
    avx2::epilogue_lanes(*t.epilogue, hi, y + kHalf, t.y_pix_stride, col + kHalf, m_hi);
  }
#pragma GCC unroll 6
  for (int p = 0; p < MR; ++p) {
    float* dst = y + p * t.y_pix_stride;
    if (kMasked) {
      _mm256_maskstore_ps(dst, m_lo, lo[p]);
      _mm256_maskstore_ps(dst + kHalf, m_hi, hi[p]);
    } else {
      _mm256_storeu_ps(dst, lo[p]);
      _mm256_storeu_ps(dst + kHalf, hi[p]);
    }
  }
}

// Channels [v * 16, v * 16 + 16) of MR pixels; kMasked: only the lanes of t.tail_mask (a template
// parameter: with both paths in one loop the two masks stay live and an accumulator spills).
template <int MR, bool kMasked>
void vector_tile(const TileArgs& t, int v) {
  constexpr bool masked = kMasked;
  const int valid = masked ? __builtin_popcount(t.tail_mask) : kLanes;
  const __m256i m_lo = avx2::first_lanes(valid), m_hi = avx2::first_lanes(valid - kHalf);
  const float* bias = t.bias ? t.bias + v * kLanes : kZeros;
  const __m256 b_lo = _mm256_maskload_ps(bias, m_lo), b_hi = _mm256_maskload_ps(bias + kHalf, m_hi);
  const int64_t taps = t.nki * t.nkj;
  if (taps <= 0) {  // the window lies wholly in the padding
    __m256 out_lo[MR], out_hi[MR];
#pragma GCC unroll 6
    for (int p = 0; p < MR; ++p) out_lo[p] = b_lo, out_hi[p] = b_hi;
    finish_vector<MR, kMasked>(t, v, m_lo, m_hi, out_lo, out_hi);
    return;
  }
  __m256 lo[MR], hi[MR];
#pragma GCC unroll 6
  for (int p = 0; p < MR; ++p) lo[p] = b_lo, hi[p] = b_hi;
  // As the AVX-512 tile: one input pointer per pixel moved along the window, a do loop.
  const int64_t x_row_step = t.row_stride - (t.nkj - 1) * t.tap_stride;
  const int64_t w_row_step = t.w_row_stride - (t.nkj - 1) * t.w_tap_stride;
  const float* xp[MR];
#pragma GCC unroll 6
  for (int p = 0; p < MR; ++p) xp[p] = t.x + p * t.pix_stride + v * kLanes;
  const float* wk = t.w + v * kLanes;
  int64_t k = 0, kj = 1;
  do {
    // Padded weight lanes are zero, so the unmasked lanes past the channels add nothing; the
    // inputs are loaded masked there (they may lie past the tensor).
    const __m256 w_lo = _mm256_loadu_ps(wk), w_hi = _mm256_loadu_ps(wk + kHalf);
#pragma GCC unroll 6
    for (int p = 0; p < MR; ++p) {
      const __m256 x_lo = masked ? _mm256_maskload_ps(xp[p], m_lo) : _mm256_loadu_ps(xp[p]);
      const __m256 x_hi =
          masked ? _mm256_maskload_ps(xp[p] + kHalf, m_hi) : _mm256_loadu_ps(xp[p] + kHalf);
      lo[p] = _mm256_fmadd_ps(x_lo, w_lo, lo[p]);
      hi[p] = _mm256_fmadd_ps(x_hi, w_hi, hi[p]);
    }
    const bool row_end = kj == t.nkj;
    const int64_t x_step = row_end ? x_row_step : t.tap_stride;
#pragma GCC unroll 6
    for (int p = 0; p < MR; ++p) xp[p] += x_step;
    wk += row_end ? w_row_step : t.w_tap_stride;
    kj = row_end ? 1 : kj + 1;
  } while (++k < taps);
  finish_vector<MR, kMasked>(t, v, m_lo, m_hi, lo, hi);
}

template <int MR, int NV, bool kTail>
void tile_avx2(const TileArgs& args) {
  const TileArgs t = args;  // a local copy: the output stores cannot alias it
  for (int v = 0; v < NV; ++v) {
    if (kTail && v == NV - 1) {
      vector_tile<MR, true>(t, v);
    } else {
      vector_tile<MR, false>(t, v);
    }
  }
}

// Grouped tile (narrow groups, G = 2, 4 or 8 channels per group in and out; the scheme of the
// AVX-512 one, conv_depthwise_nhwc_avx512.cc): a group never spans the two 8-lane halves of a
// vector, so each half runs alone, P pixels at a time (P * G accumulators of the 16 ymm), and
// its accumulators are rotated within groups by _mm256_permutevar8x32_ps.
// Pixels [p0, p0 + P) of half `half` (lanes [8 * half, 8 * half + 8)), `mask` its valid lanes.
template <int P, int G, bool kMasked>
void grouped_half(const TileArgs& t, int p0, int half, __m256i mask) {
  const int64_t off = half * kHalf;
  const __m256 b = _mm256_maskload_ps((t.bias ? t.bias : kZeros) + off, mask);
  __m256 acc[P][G];
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 8
    for (int r = 0; r < G; ++r) acc[p][r] = r == 0 ? b : _mm256_setzero_ps();
  }
  const int64_t taps = t.nki * t.nkj;
  if (taps > 0) {
    const int64_t x_row_step = t.row_stride - (t.nkj - 1) * t.tap_stride;
    const int64_t w_row_step = t.w_row_stride - (t.nkj - 1) * t.w_tap_stride;
    const float* xp[P];
#pragma GCC unroll 6
    for (int p = 0; p < P; ++p) xp[p] = t.x + (p0 + p) * t.pix_stride + off;
    const float* wk = t.w + off;
    int64_t k = 0, kj = 1;
    do {
      __m256 xv[P];
#pragma GCC unroll 6
      for (int p = 0; p < P; ++p) {
        xv[p] = kMasked ? _mm256_maskload_ps(xp[p], mask) : _mm256_loadu_ps(xp[p]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < G; ++r) {
        const __m256 wv = _mm256_loadu_ps(wk + r * t.w_rot_stride);
#pragma GCC unroll 6
        for (int p = 0; p < P; ++p) acc[p][r] = _mm256_fmadd_ps(xv[p], wv, acc[p][r]);
      }
      const bool row_end = kj == t.nkj;
      const int64_t x_step = row_end ? x_row_step : t.tap_stride;
#pragma GCC unroll 6
      for (int p = 0; p < P; ++p) xp[p] += x_step;
      wk += row_end ? w_row_step : t.w_tap_stride;
      kj = row_end ? 1 : kj + 1;
    } while (++k < taps);
  }
  __m256 out[P];
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) {
    __m256 sum = acc[p][0];
#pragma GCC unroll 8
    for (int r = 1; r < G; ++r) {
      const __m256i idx =
          _mm256_load_si256(reinterpret_cast<const __m256i*>(kGroupRotations<G, kHalf>.lanes[r]));
      sum = _mm256_add_ps(sum, _mm256_permutevar8x32_ps(acc[p][r], idx));
    }
    out[p] = sum;
  }
  float* y = t.y + p0 * t.y_pix_stride + off;
  if (t.epilogue) avx2::epilogue_lanes(*t.epilogue, out, y, t.y_pix_stride, t.oc0 + off, mask);
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) {
    float* dst = y + p * t.y_pix_stride;
    if (kMasked) {
      _mm256_maskstore_ps(dst, mask, out[p]);
    } else {
      _mm256_storeu_ps(dst, out[p]);
    }
  }
}

template <int MR, int G, bool kMasked>
void grouped_half_tile(const TileArgs& t, int half, __m256i mask) {
  constexpr int kChunk = G >= 8 ? 1 : 12 / G;  // pixels per pass: 12 accumulators at most
  int p0 = 0;
  for (; p0 + kChunk <= MR; p0 += kChunk) grouped_half<kChunk, G, kMasked>(t, p0, half, mask);
  if constexpr (MR % kChunk != 0) grouped_half<MR % kChunk, G, kMasked>(t, p0, half, mask);
}

template <int MR, int G, bool kTail>
void grouped_tile_avx2(const TileArgs& args) {
  const TileArgs t = args;  // a local copy: the output stores cannot alias it
  const int valid = kTail ? __builtin_popcount(t.tail_mask) : kLanes;
  const __m256i all = avx2::first_lanes(kHalf);
  for (int half = 0; half < 2; ++half) {
    const int lanes = valid - half * kHalf;
    if (lanes <= 0) break;
    if (kTail && lanes < kHalf) {
      grouped_half_tile<MR, G, true>(t, half, avx2::first_lanes(lanes));
    } else {
      grouped_half_tile<MR, G, false>(t, half, all);
    }
  }
}

template <bool kTail>
struct GroupedTiles {
  template <int MR, int G>
  static constexpr TileFn fn() {
    return &grouped_tile_avx2<MR, G, kTail>;
  }
};

template <bool kTail>
struct Tiles {
  template <int MR, int NV>
  static constexpr TileFn fn() {
    return &tile_avx2<MR, NV, kTail>;
  }
};

constexpr TileTable kTiles = tile_table<Tiles<false>>();
constexpr TileTable kTailTiles = tile_table<Tiles<true>>();

}  // namespace

const TileTable& tiles_avx2() {
  return kTiles;
}

const TileTable& tail_tiles_avx2() {
  return kTailTiles;
}

const GroupedTileTable& grouped_tiles_avx2(int width, bool tail) {
  return tail ? grouped_tile_table<GroupedTiles<true>>(width)
              : grouped_tile_table<GroupedTiles<false>>(width);
}

}  // namespace cuvil::runtime::cpu::depthwise

#include "runtime/cpu/target_end.h"
