// AVX-512 register tiles of conv2d.depthwise_nhwc (the driver and the portable tile are in
// conv_depthwise_nhwc.cc). This file alone is compiled for AVX-512 (the target pragma below) and
// runs only when conv2d_depthwise_nhwc_isa() is avx512; headers come before the pragma, so that
// no inline code of theirs is compiled for it.
#include <cstdint>

#include "runtime/cpu/conv_depthwise_nhwc_tiles.h"
#include "runtime/cpu/register_tile.h"

#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/epilogue_lanes_avx512.h"

namespace cuvil::runtime::cpu::depthwise {

namespace {

// The bias of a tile without one.
alignas(64) constexpr float kZeros[kMaxNV * kLanes] = {};

template <int MR, int NV, bool kTail>
void tile_avx512(const TileArgs& args) {
  const TileArgs t = args;  // a local copy: the output stores cannot alias it
  const __mmask16 last = kTail ? t.tail_mask : 0xffff;
  auto store = [&](int p, int v, __m512 value) {
    float* dst = t.y + p * t.y_pix_stride + v * kLanes;
    if (kTail && v == NV - 1) {
      _mm512_mask_storeu_ps(dst, last, value);
    } else {
      _mm512_storeu_ps(dst, value);
    }
  };
  // Without bias the accumulators start from zeros (a branch would make GCC keep them in memory).
  const float* bias = t.bias ? t.bias : kZeros;
  __m512 b[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    b[v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, bias + v * kLanes);
  }
  const int64_t taps = t.nki * t.nkj;
  if (taps <= 0) {  // the window lies wholly in the padding
    __m512 out[MR][NV];
#pragma GCC unroll 14
    for (int p = 0; p < MR; ++p) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) out[p][v] = b[v];
    }
    if (t.epilogue) avx512::epilogue_lanes(*t.epilogue, out, t.y, t.y_pix_stride, t.oc0, last);
#pragma GCC unroll 14
    for (int p = 0; p < MR; ++p) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) store(p, v, out[p][v]);
    }
    return;
  }
  __m512 acc[MR][NV];
#pragma GCC unroll 14
  for (int p = 0; p < MR; ++p) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[p][v] = b[v];
  }
  // Every loop over the tile's pixels and vectors is unrolled by pragma: without, GCC kept the
  // one-vector tail tiles' accumulators in memory, a store after every FMA.
  // The window's taps row by row in one loop. One input pointer per pixel, moved along the window
  // (GCC's own addressing of p * pix_stride + v * 16 spilled offsets to the stack); a do loop, as
  // GCC keeps the accumulators in registers only when the loop is sure to run.
  const int64_t x_row_step = t.row_stride - (t.nkj - 1) * t.tap_stride;
  const int64_t w_row_step = t.w_row_stride - (t.nkj - 1) * t.w_tap_stride;
  const float* xp[MR];
#pragma GCC unroll 14
  for (int p = 0; p < MR; ++p) xp[p] = t.x + p * t.pix_stride;
  const float* wk = t.w;
  int64_t k = 0, kj = 1;
  do {
    __m512 wv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(wk + v * kLanes);
#pragma GCC unroll 14
    for (int p = 0; p < MR; ++p) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const float* src = xp[p] + v * kLanes;
        const __m512 xv =
            kTail && v == NV - 1 ? _mm512_maskz_loadu_ps(last, src) : _mm512_loadu_ps(src);
        acc[p][v] = _mm512_fmadd_ps(xv, wv[v], acc[p][v]);
      }
    }
    const bool row_end = kj == t.nkj;
    const int64_t x_step = row_end ? x_row_step : t.tap_stride;
#pragma GCC unroll 14
    for (int p = 0; p < MR; ++p) xp[p] += x_step;
    wk += row_end ? w_row_step : t.w_tap_stride;
    kj = row_end ? 1 : kj + 1;
  } while (++k < taps);
  if (t.epilogue) avx512::epilogue_lanes(*t.epilogue, acc, t.y, t.y_pix_stride, t.oc0, last);
#pragma GCC unroll 14
  for (int p = 0; p < MR; ++p) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) store(p, v, acc[p][v]);
  }
}

// Grouped tile (narrow groups, G = channels per group, in and out, 2, 4 or 8): a vector of 16
// channels holds 16 / G whole groups, in and out alike. Accumulator r gathers, in input lane
// (q, i) of group q, input i times the weight from i to output (i + r) mod G (packed so, per
// tap and r, by the driver); no shuffle in the window loop. Output lane (q, o) is then the sum
// over r of accumulator r's lane (q, (o - r) mod G): G - 1 rotations within each group per
// pixel, after the window.
template <int MR, int G, bool kTail>
void grouped_tile_avx512(const TileArgs& args) {
  const TileArgs t = args;  // a local copy: the output stores cannot alias it
  const __mmask16 last = kTail ? t.tail_mask : 0xffff;
  const __m512 b = _mm512_maskz_loadu_ps(last, t.bias ? t.bias : kZeros);
  __m512 acc[MR][G];
#pragma GCC unroll 6
  for (int p = 0; p < MR; ++p) {
#pragma GCC unroll 8
    for (int r = 0; r < G; ++r) acc[p][r] = r == 0 ? b : _mm512_setzero_ps();
  }
  const int64_t taps = t.nki * t.nkj;
  if (taps > 0) {
    // As the depthwise tile: one input pointer per pixel moved along the window, a do loop.
    const int64_t x_row_step = t.row_stride - (t.nkj - 1) * t.tap_stride;
    const int64_t w_row_step = t.w_row_stride - (t.nkj - 1) * t.w_tap_stride;
    const float* xp[MR];
#pragma GCC unroll 6
    for (int p = 0; p < MR; ++p) xp[p] = t.x + p * t.pix_stride;
    const float* wk = t.w;
    int64_t k = 0, kj = 1;
    do {
      __m512 xv[MR];
#pragma GCC unroll 6
      for (int p = 0; p < MR; ++p) {
        xv[p] = kTail ? _mm512_maskz_loadu_ps(last, xp[p]) : _mm512_loadu_ps(xp[p]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < G; ++r) {
        const __m512 wv = _mm512_loadu_ps(wk + r * t.w_rot_stride);
#pragma GCC unroll 6
        for (int p = 0; p < MR; ++p) acc[p][r] = _mm512_fmadd_ps(xv[p], wv, acc[p][r]);
      }
      const bool row_end = kj == t.nkj;
      const int64_t x_step = row_end ? x_row_step : t.tap_stride;
#pragma GCC unroll 6
      for (int p = 0; p < MR; ++p) xp[p] += x_step;
      wk += row_end ? w_row_step : t.w_tap_stride;
      kj = row_end ? 1 : kj + 1;
    } while (++k < taps);
  }
  __m512 out[MR][1];
#pragma GCC unroll 6
  for (int p = 0; p < MR; ++p) {
    __m512 sum = acc[p][0];
#pragma GCC unroll 8
    for (int r = 1; r < G; ++r) {
      sum = _mm512_add_ps(
          sum,
          _mm512_permutexvar_ps(_mm512_load_si512(kGroupRotations<G, kLanes>.lanes[r]), acc[p][r]));
    }
    out[p][0] = sum;
  }
  if (t.epilogue) avx512::epilogue_lanes(*t.epilogue, out, t.y, t.y_pix_stride, t.oc0, last);
#pragma GCC unroll 6
  for (int p = 0; p < MR; ++p) {
    float* dst = t.y + p * t.y_pix_stride;
    if (kTail) {
      _mm512_mask_storeu_ps(dst, last, out[p][0]);
    } else {
      _mm512_storeu_ps(dst, out[p][0]);
    }
  }
}

template <bool kTail>
struct GroupedTiles {
  template <int MR, int G>
  static constexpr TileFn fn() {
    return &grouped_tile_avx512<MR, G, kTail>;
  }
};

template <bool kTail>
struct Tiles {
  template <int MR, int NV>
  static constexpr TileFn fn() {
    return &tile_avx512<MR, NV, kTail>;
  }
};

constexpr TileTable kTiles = tile_table<Tiles<false>>();
constexpr TileTable kTailTiles = tile_table<Tiles<true>>();

}  // namespace

const TileTable& tiles_avx512() {
  return kTiles;
}

const TileTable& tail_tiles_avx512() {
  return kTailTiles;
}

const GroupedTileTable& grouped_tiles_avx512(int width, bool tail) {
  return tail ? grouped_tile_table<GroupedTiles<true>>(width)
              : grouped_tile_table<GroupedTiles<false>>(width);
}

}  // namespace cuvil::runtime::cpu::depthwise

#include "runtime/cpu/target_end.h"
