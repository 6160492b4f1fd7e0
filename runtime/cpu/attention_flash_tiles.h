// How flash attention's P V product is cut into register tiles, shared by the AVX-512 and bf16
// micro-kernels (attention_flash_avx512.cc, attention_flash_bf16.cc): output columns in blocks
// of up to Vectors 16-lane vectors, the last one masked, and rows in groups of up to Rows.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/register_rows.h"

namespace cuvil::runtime::cpu {

// Calls tile(vectors, rows, r, c0, last) per tile: `vectors` (1..Vectors) as a compile-time
// constant, the group's rows and first row, the block's first column, and the lane mask of its
// last vector.
template <int Rows, int Vectors, class Tile>
inline void for_each_pv_tile(int64_t rows, int64_t dv, Tile&& tile) {
  constexpr int64_t kCols = 16 * Vectors;
  for (int64_t c0 = 0; c0 < dv; c0 += kCols) {
    const int64_t cols = std::min(kCols, dv - c0);
    const int vectors = static_cast<int>((cols + 15) / 16);
    const auto last = static_cast<uint16_t>(0xffffu >> (16 * vectors - cols));
    for (int64_t r = 0; r < rows; r += Rows) {
      const int nr = static_cast<int>(std::min<int64_t>(Rows, rows - r));
      with_rows<Vectors>(vectors, [&](auto c) { tile(c, nr, r, c0, last); });
    }
  }
}

}  // namespace cuvil::runtime::cpu
