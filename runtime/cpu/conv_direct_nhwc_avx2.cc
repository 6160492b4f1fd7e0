// AVX2 + FMA register tiles of conv2d.direct_nhwc (the driver and the portable tile are in
// conv_direct_nhwc.cc). This file alone is compiled for AVX2 (the target pragma below) and runs
// only when conv2d_direct_nhwc_isa() is avx2; headers come before the pragma, so that no inline
// code of theirs is compiled for it.
//
// The packed weights and the tile shapes (MR pixels x NV vectors of 16 channels) are the ones
// the driver chooses for 32 AVX-512 registers; AVX2 has 16, so each tile runs as sub-tiles of at
// most kSubPixels pixels x one vector of 16 channels (two ymm halves): 2 * 6 accumulators, two
// weight registers and one broadcast, the classic 6 x 16 AVX2 shape. Every sub-tile walks the
// whole window; the input lines and the vector's weights it re-reads stay in L1 and L2.
#include <algorithm>
#include <cstdint>

#include "runtime/cpu/conv_direct_nhwc_tiles.h"
#include "runtime/cpu/register_tile.h"

#include "runtime/cpu/target_avx2_begin.h"

#include "runtime/cpu/elementwise_math_avx2.h"
#include "runtime/cpu/epilogue_lanes_avx2.h"

namespace cuvil::runtime::cpu {

namespace {

using TileArgs = DirectTileArgs;

constexpr int kSubPixels = 6;
constexpr int kHalf = 8;  // floats per ymm register

// Lanes [0, 8) and [8, 16) of a 16-bit lane mask as two ymm load/store masks (tail masks are
// contiguous low bits).
struct HalfMasks {
  __m256i lo, hi;
};

HalfMasks half_masks(uint16_t mask) {
  const int valid = __builtin_popcount(mask);
  return {avx2::first_lanes(valid), avx2::first_lanes(valid - kHalf)};
}

// Input channel c of P pixels times its 16 weights into the accumulators.
template <int P>
__attribute__((always_inline)) inline void channel_step(const float* const (&xp)[P], int64_t c,
                                                        const float* w, __m256 (&lo)[P],
                                                        __m256 (&hi)[P]) {
  const __m256 w0 = _mm256_loadu_ps(w);
  const __m256 w1 = _mm256_loadu_ps(w + kHalf);
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) {
    const __m256 xb = _mm256_broadcast_ss(xp[p] + c);
    lo[p] = _mm256_fmadd_ps(xb, w0, lo[p]);
    hi[p] = _mm256_fmadd_ps(xb, w1, hi[p]);
  }
}

// P pixels from the tile's pixel p0 x the tile's vector v of 16 output channels.
template <int P>
void sub_tile(const TileArgs& t, int p0, int v, bool full, const HalfMasks& m, bool prefetch) {
  float* y = t.y + p0 * t.y_pix_stride + v * kLanes;
  // Every loop over P fully unrolled (pragmas, no branch inside): only then does GCC keep the
  // accumulator arrays in registers instead of storing them after every FMA.
  __m256 lo[P], hi[P];
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) lo[p] = hi[p] = _mm256_setzero_ps();
  if (t.accumulate && full) {
#pragma GCC unroll 6
    for (int p = 0; p < P; ++p) {
      lo[p] = _mm256_loadu_ps(y + p * t.y_pix_stride);
      hi[p] = _mm256_loadu_ps(y + p * t.y_pix_stride + kHalf);
    }
  } else if (t.accumulate) {
#pragma GCC unroll 6
    for (int p = 0; p < P; ++p) {
      lo[p] = _mm256_maskload_ps(y + p * t.y_pix_stride, m.lo);
      hi[p] = _mm256_maskload_ps(y + p * t.y_pix_stride + kHalf, m.hi);
    }
  }
  const float* x = t.x + p0 * t.pix_stride;
  const float* wp = t.w + v * kLanes;
  const char* pf = prefetch ? t.prefetch : nullptr;
  for (int64_t c0 = 0; c0 < t.cg; c0 += kLanes) {
    const int64_t cn = std::min<int64_t>(kLanes, t.cg - c0);
    for (int64_t ki = 0; ki < t.kh; ++ki) {
      for (int64_t kj = 0; kj < t.kw; ++kj) {
        const float* xc = x + ki * t.row_stride + kj * t.tap_stride + c0;
        if (pf) {
          for (int i = 0; i < t.prefetch_lines_per_group && pf < t.prefetch_end; ++i, pf += 64) {
            _mm_prefetch(pf, _MM_HINT_T1);
          }
        }
        const float* xp[P];
#pragma GCC unroll 6
        for (int p = 0; p < P; ++p) xp[p] = xc + p * t.pix_stride;
        if (cn == kLanes) {
          // A whole block of 16 channels: unrolled, the channel offsets become displacements
          // (with them computed per pixel, the loop issued more integer than FMA instructions).
#pragma GCC unroll 16
          for (int64_t c = 0; c < kLanes; ++c, wp += t.bw) channel_step<P>(xp, c, wp, lo, hi);
        } else {
          for (int64_t c = 0; c < cn; ++c, wp += t.bw) channel_step<P>(xp, c, wp, lo, hi);
        }
      }
    }
  }
  __m256 b_lo = _mm256_setzero_ps(), b_hi = _mm256_setzero_ps();
  if (t.bias && t.finish) {
    const float* b = t.bias + v * kLanes;
    b_lo = full ? _mm256_loadu_ps(b) : _mm256_maskload_ps(b, m.lo);
    b_hi = full ? _mm256_loadu_ps(b + kHalf) : _mm256_maskload_ps(b + kHalf, m.hi);
  }
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) {
    lo[p] = _mm256_add_ps(lo[p], b_lo);
    hi[p] = _mm256_add_ps(hi[p], b_hi);
  }
  if (t.finish && t.epilogue) {
    const int64_t col = t.col + v * kLanes;
    avx2::epilogue_lanes(*t.epilogue, lo, y, t.y_pix_stride, col, m.lo);
    avx2::epilogue_lanes(*t.epilogue, hi, y + kHalf, t.y_pix_stride, col + kHalf, m.hi);
  }
  if (full) {
#pragma GCC unroll 6
    for (int p = 0; p < P; ++p) {
      _mm256_storeu_ps(y + p * t.y_pix_stride, lo[p]);
      _mm256_storeu_ps(y + p * t.y_pix_stride + kHalf, hi[p]);
    }
  } else {
#pragma GCC unroll 6
    for (int p = 0; p < P; ++p) {
      _mm256_maskstore_ps(y + p * t.y_pix_stride, m.lo, lo[p]);
      _mm256_maskstore_ps(y + p * t.y_pix_stride + kHalf, m.hi, hi[p]);
    }
  }
}

using SubTileFn = void (*)(const TileArgs&, int, int, bool, const HalfMasks&, bool);
constexpr SubTileFn kSubTiles[kSubPixels] = {&sub_tile<1>, &sub_tile<2>, &sub_tile<3>,
                                             &sub_tile<4>, &sub_tile<5>, &sub_tile<6>};

template <int MR, int NV>
void tile(const TileArgs& t) {
  // Even sub-tiles: 14 pixels run as 5 + 5 + 4, not 6 + 6 + 2.
  constexpr int kChunks = (MR + kSubPixels - 1) / kSubPixels;
  constexpr int kPixels = (MR + kChunks - 1) / kChunks;
  const HalfMasks all = half_masks(0xffff);
  const HalfMasks tail = half_masks(t.tail_mask);
  for (int v = 0; v < NV; ++v) {
    const bool last = v == NV - 1;
    const bool full = !last || t.tail_mask == 0xffff;
    for (int p0 = 0; p0 < MR; p0 += kPixels) {
      const int n = std::min(kPixels, MR - p0);
      // The next block's weights are prefetched once per tile, during its first sub-tile.
      kSubTiles[n - 1](t, p0, v, full, last ? tail : all, v == 0 && p0 == 0);
    }
  }
}

struct Tiles {
  template <int MR, int NV>
  static constexpr DirectTileFn fn() {
    return &tile<MR, NV>;
  }
};

constexpr DirectTileTable kTiles = register_tile_table<DirectTileFn, Tiles>();

}  // namespace

const DirectTileTable& direct_nhwc_tiles_avx2() {
  return kTiles;
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
