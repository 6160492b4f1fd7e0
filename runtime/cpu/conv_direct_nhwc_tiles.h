// What conv2d.direct_nhwc's portable driver (conv_direct_nhwc.cc) and its AVX-512 and AVX2
// register tiles (conv_direct_nhwc_avx512.cc, conv_direct_nhwc_avx2.cc) share: a tile's arguments
// and the tables of tiles.
#pragma once

#include <array>
#include <cstdint>

#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/register_tile.h"

namespace cuvil::runtime::cpu {

struct DirectTileArgs {
  const float* x;      // input window origin of the tile's first pixel, group's first channel
  int64_t pix_stride;  // floats between consecutive output pixels' windows (sw * C)
  int64_t row_stride;  // floats between input rows
  int64_t tap_stride;  // floats between horizontal taps (C)
  int64_t kh, kw, cg;
  const float* w;  // packed block at the chunk's first input channel: [cg/16][kh][kw][16][bw]
  int64_t bw;
  float* y;              // output of the first pixel at the block's first channel
  int64_t y_pix_stride;  // O
  const float* bias;     // at the block's first channel, or null
  uint16_t tail_mask;    // valid lanes of the last vector
  bool accumulate;       // add to the partial sums already in y (not the first channel chunk)
  bool finish;           // last channel chunk: add the bias (and apply `epilogue`)
  // The step's epilogue, applied in registers on the last channel chunk (null: none, or the
  // driver applies it afterwards); `col` is the output channel of y's first lane.
  const LaneEpilogue* epilogue;
  int64_t col;
  // Lines [prefetch, prefetch_end) of the next block's packed weights to bring into L2,
  // prefetch_lines_per_group before each 16 channels x 1 tap (null: none). The hardware
  // prefetcher stops at 4 KiB pages, so a block's first tile would otherwise wait on DRAM line by
  // line.
  const char* prefetch;
  const char* prefetch_end;
  int prefetch_lines_per_group;
};

using DirectTileFn = void (*)(const DirectTileArgs&);

// The tile of each shape, indexed by register_tile_index(mr, nv) (null where it does not fit).
using DirectTileTable = std::array<DirectTileFn, kMaxMR * kMaxNV>;
const DirectTileTable& direct_nhwc_tiles_avx512();
const DirectTileTable& direct_nhwc_tiles_avx2();

}  // namespace cuvil::runtime::cpu
