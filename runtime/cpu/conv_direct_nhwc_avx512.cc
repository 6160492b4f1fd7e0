// AVX-512 register tiles of conv2d.direct_nhwc (the driver and the portable tile are in
// conv_direct_nhwc.cc). This file alone is compiled for AVX-512 (the target pragma below) and
// runs only when conv2d_direct_nhwc_isa() is avx512; headers come before the pragma, so that no
// inline code of theirs is compiled for it.
#include <algorithm>
#include <cstdint>

#include "runtime/cpu/conv_direct_nhwc_tiles.h"
#include "runtime/cpu/register_tile.h"

#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/epilogue_lanes_avx512.h"

namespace cuvil::runtime::cpu {

namespace {

using TileArgs = DirectTileArgs;

template <int MR, int NV>
void tile(const TileArgs& t) {
  __m512 acc[MR][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __mmask16 m = v == NV - 1 ? t.tail_mask : 0xffff;
#pragma GCC unroll 14
    for (int p = 0; p < MR; ++p) {
      acc[p][v] = t.accumulate ? _mm512_maskz_loadu_ps(m, t.y + p * t.y_pix_stride + v * kLanes)
                               : _mm512_setzero_ps();
    }
  }
  // 16 input channels at a time through the whole window: their weights (kh*kw*16*bw) and
  // input lines stay in L1 while the window is walked.
  const float* wp = t.w;
  const char* pf = t.prefetch;
  for (int64_t c0 = 0; c0 < t.cg; c0 += kLanes) {
    const int64_t cn = std::min<int64_t>(kLanes, t.cg - c0);
    for (int64_t ki = 0; ki < t.kh; ++ki) {
      for (int64_t kj = 0; kj < t.kw; ++kj) {
        const float* xc = t.x + ki * t.row_stride + kj * t.tap_stride + c0;
        auto step = [&](int64_t c) {
          __m512 wv[NV];
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(wp + v * kLanes);
#pragma GCC unroll 14
          for (int p = 0; p < MR; ++p) {
            const __m512 xb = _mm512_set1_ps(xc[p * t.pix_stride + c]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_fmadd_ps(xb, wv[v], acc[p][v]);
          }
          wp += t.bw;
        };
        for (int i = 0; i < t.prefetch_lines_per_group && pf < t.prefetch_end; ++i, pf += 64) {
          _mm_prefetch(pf, _MM_HINT_T1);
        }
        if (cn == kLanes) {
          // A whole block of 16 channels: unrolled, the channel offsets become displacements.
#pragma GCC unroll 16
          for (int64_t c = 0; c < kLanes; ++c) step(c);
        } else {
          for (int64_t c = 0; c < cn; ++c) step(c);
        }
      }
    }
  }
  if (t.bias && t.finish) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == NV - 1 ? t.tail_mask : 0xffff;
      const __m512 b = _mm512_maskz_loadu_ps(m, t.bias + v * kLanes);
#pragma GCC unroll 14
      for (int p = 0; p < MR; ++p) acc[p][v] = _mm512_add_ps(acc[p][v], b);
    }
  }
  if (t.finish && t.epilogue) {
    avx512::epilogue_lanes(*t.epilogue, acc, t.y, t.y_pix_stride, t.col, t.tail_mask);
  }
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __mmask16 m = v == NV - 1 ? t.tail_mask : 0xffff;
#pragma GCC unroll 14
    for (int p = 0; p < MR; ++p) {
      _mm512_mask_storeu_ps(t.y + p * t.y_pix_stride + v * kLanes, m, acc[p][v]);
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

const DirectTileTable& direct_nhwc_tiles_avx512() {
  return kTiles;
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
