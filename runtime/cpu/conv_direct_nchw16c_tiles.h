// What conv2d.direct_nchw16c's portable driver (conv_direct_nchw16c.cc) and its AVX-512 register
// tiles (conv_direct_nchw16c_avx512.cc) share: the tile limits, a tile's arguments and the tables
// of tiles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace cuvil::runtime::cpu::nchw16c {

constexpr int kLanes = 16;
constexpr int kMaxAccumulators = 28;  // of 32 zmm registers: the rest hold weights and input
constexpr int kMaxMR = 14;
constexpr int kMaxNV = 4;

struct TileArgs {
  const float* x;        // input window origin of the tile's first pixel, block 0, lane 0
  int64_t block_stride;  // floats between input channel blocks (hp * wp * 16)
  int64_t row_stride;    // floats between input rows (wp * 16)
  int64_t pix_stride;    // floats between consecutive output pixels' windows (sw * 16)
  int64_t cb, kh, kw;
  int64_t last_lanes;  // input lanes of the last block that hold channels (C - 16 (cb - 1))
  const float* w;      // packed group [cb][kh][kw][16][bw]
  int64_t bw;
  float* y;                // output of the first pixel in the group's first block
  int64_t y_block_stride;  // floats between output blocks (OH * OW * 16)
  const float* bias;       // at the group's first channel, or null
  int64_t bias_valid;      // channels of bias from there (past them: padding, bias 0)
};

using TileFn = void (*)(const TileArgs&);

// The tile of each shape, indexed by (mr - 1) * kMaxNV + (nv - 1) (null past kMaxAccumulators).
using TileTable = std::array<TileFn, kMaxMR * kMaxNV>;

template <class Kernels, int MR, int NV>
constexpr TileFn tile_or_null() {
  if constexpr (MR * NV > kMaxAccumulators) {
    return nullptr;
  } else {
    return Kernels::template fn<MR, NV>();
  }
}

template <class Kernels, size_t... I>
constexpr TileTable make_tiles(std::index_sequence<I...>) {
  return {tile_or_null<Kernels, static_cast<int>(I / kMaxNV) + 1,
                       static_cast<int>(I % kMaxNV) + 1>()...};
}

template <class Kernels>
constexpr TileTable tile_table() {
  return make_tiles<Kernels>(std::make_index_sequence<kMaxMR * kMaxNV>{});
}

const TileTable& tiles_avx512();

}  // namespace cuvil::runtime::cpu::nchw16c
