// What conv2d.depthwise_nhwc's portable driver (conv_depthwise_nhwc.cc) and its AVX-512 and AVX2
// register tiles (conv_depthwise_nhwc_avx512.cc, conv_depthwise_nhwc_avx2.cc) share: a tile's
// arguments and the tables of tiles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/register_tile.h"

namespace cuvil::runtime::cpu::depthwise {

// Most interior pixels per tile (the tile is up to kTilePixels x kMaxNV vectors of 16 channels).
constexpr int kTilePixels = 6;

struct TileArgs {
  const float* x;        // input at pixel 0's first valid tap and the tile's first input channel
  int64_t pix_stride;    // floats between consecutive output pixels' windows (sw * C)
  int64_t row_stride;    // floats between input rows (W * C)
  int64_t tap_stride;    // floats between horizontal taps (C)
  int64_t nki, nkj;      // valid kernel rows and columns from that tap (0: output is the bias)
  const float* w;        // packed weights at the first valid tap, the tile's first channel
  int64_t w_row_stride;  // KW * Op
  int64_t w_tap_stride;  // Op (grouped: G * Op)
  int64_t w_rot_stride;  // grouped tiles: floats between a tap's rotations (Op)
  const float* bias;     // at the tile's first output channel, or null
  float* y;              // output of pixel 0 at the tile's first output channel
  int64_t y_pix_stride;  // O
  uint16_t tail_mask;    // valid lanes of the tile's last vector
  int64_t mult;          // output channels per input channel (portable tile only)
  int64_t oc0;           // the tile's first output channel
  // The step's epilogue, applied in registers before the store (null: none, or the driver
  // applies it to the finished rows).
  const LaneEpilogue* epilogue;
};

using TileFn = void (*)(const TileArgs&);

// Tiles of 1 .. kTilePixels pixels x 1 .. kMaxNV vectors, indexed by register_tile_index.
using TileTable = std::array<TileFn, kTilePixels * kMaxNV>;

template <class Kernels>
constexpr TileTable tile_table() {
  return make_register_tile_table<TileFn, Kernels>(
      std::make_index_sequence<kTilePixels * kMaxNV>{});
}

// Grouped convolutions of G = 2, 4 or 8 channels per group in and out (is_narrow_group_conv):
// tiles of 1 .. max_grouped_mr(G) pixels x one vector (G accumulators per pixel), indexed by
// pixels - 1; null past that.
using GroupedTileTable = std::array<TileFn, kTilePixels>;
constexpr int max_grouped_mr(int g) {
  return g >= 8 ? 3 : kTilePixels;
}

// The lane of accumulator r that output lane l of a grouped tile adds: the same group of g
// lanes, channel (l - r) mod g.
constexpr int rotated_lane(int l, int r, int g) {
  return (l & ~(g - 1)) | ((l - r) & (g - 1));
}

// rotated_lane() of every rotation r < G and lane of a vector of kWidth lanes: the index vectors
// of the tiles' lane permutes.
template <int G, int kWidth>
struct GroupRotations {
  alignas(64) int32_t lanes[8][kWidth] = {};
  constexpr GroupRotations() {
    for (int r = 0; r < G; ++r) {
      for (int l = 0; l < kWidth; ++l) lanes[r][l] = rotated_lane(l, r, G);
    }
  }
};
template <int G, int kWidth>
inline constexpr GroupRotations<G, kWidth> kGroupRotations{};

// The grouped tiles of one instruction set for G = width (2, 4 or 8): table[mr - 1] =
// Kernels::fn<mr, G>() up to max_grouped_mr(G), null past it (never instantiated). Kernels is a
// type with `template <int MR, int G> static constexpr TileFn fn()`.
template <class Kernels, int G, int MR>
constexpr TileFn grouped_tile_entry() {
  if constexpr (MR <= max_grouped_mr(G)) {
    return Kernels::template fn<MR, G>();
  } else {
    return nullptr;
  }
}

template <class Kernels, int G, size_t... I>
constexpr GroupedTileTable make_grouped_tile_table(std::index_sequence<I...>) {
  return {grouped_tile_entry<Kernels, G, static_cast<int>(I) + 1>()...};
}

template <class Kernels>
const GroupedTileTable& grouped_tile_table(int width) {
  static constexpr GroupedTileTable k2 =
      make_grouped_tile_table<Kernels, 2>(std::make_index_sequence<kTilePixels>{});
  static constexpr GroupedTileTable k4 =
      make_grouped_tile_table<Kernels, 4>(std::make_index_sequence<kTilePixels>{});
  static constexpr GroupedTileTable k8 =
      make_grouped_tile_table<Kernels, 8>(std::make_index_sequence<kTilePixels>{});
  return width == 2 ? k2 : width == 4 ? k4 : k8;
}

const GroupedTileTable& grouped_tiles_avx512(int width, bool tail);
const GroupedTileTable& grouped_tiles_avx2(int width, bool tail);

// The AVX-512 tiles (multiplier 1 only): all vectors full, or the last one masked by tail_mask.
const TileTable& tiles_avx512();
const TileTable& tail_tiles_avx512();
// The AVX2 tiles (conv_depthwise_nhwc_avx2.cc), likewise.
const TileTable& tiles_avx2();
const TileTable& tail_tiles_avx2();

}  // namespace cuvil::runtime::cpu::depthwise
