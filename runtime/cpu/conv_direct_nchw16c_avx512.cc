// AVX-512 register tiles of conv2d.direct_nchw16c (the driver and the portable tile are in
// conv_direct_nchw16c.cc). This file alone is compiled for AVX-512 (the target pragma below) and
// runs only when conv2d_direct_nchw16c_isa() is avx512; headers come before the pragma, so that
// no inline code of theirs is compiled for it.
#include <algorithm>
#include <cstdint>

#include "runtime/cpu/conv_direct_nchw16c_tiles.h"

#include "runtime/cpu/target_avx512_begin.h"

namespace cuvil::runtime::cpu::nchw16c {

namespace {

template <int MR, int NV>
void tile_avx512(const TileArgs& t) {
  __m512 acc[MR][NV];
  for (int p = 0; p < MR; ++p) {
    for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_setzero_ps();
  }
  for (int64_t cb = 0; cb < t.cb; ++cb) {
    const int64_t lanes = cb == t.cb - 1 ? t.last_lanes : kLanes;
    for (int64_t ki = 0; ki < t.kh; ++ki) {
      for (int64_t kj = 0; kj < t.kw; ++kj) {
        const float* xc = t.x + cb * t.block_stride + ki * t.row_stride + kj * kLanes;
        const float* wp = t.w + ((cb * t.kh + ki) * t.kw + kj) * kLanes * t.bw;
        for (int64_t l = 0; l < lanes; ++l, wp += t.bw) {
          __m512 wv[NV];
          for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(wp + v * kLanes);
          for (int p = 0; p < MR; ++p) {
            const __m512 xb = _mm512_set1_ps(xc[p * t.pix_stride + l]);
            for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_fmadd_ps(xb, wv[v], acc[p][v]);
          }
        }
      }
    }
  }
  for (int v = 0; v < NV; ++v) {
    const int64_t valid = std::clamp<int64_t>(t.bias_valid - v * kLanes, 0, kLanes);
    const __mmask16 m = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512 b = t.bias ? _mm512_maskz_loadu_ps(m, t.bias + v * kLanes) : _mm512_setzero_ps();
    float* y = t.y + v * t.y_block_stride;
    for (int p = 0; p < MR; ++p) _mm512_storeu_ps(y + p * kLanes, _mm512_add_ps(acc[p][v], b));
  }
}

struct Tiles {
  template <int MR, int NV>
  static constexpr TileFn fn() {
    return &tile_avx512<MR, NV>;
  }
};

constexpr TileTable kTiles = tile_table<Tiles>();

}  // namespace

const TileTable& tiles_avx512() {
  return kTiles;
}

}  // namespace cuvil::runtime::cpu::nchw16c

#include "runtime/cpu/target_end.h"
