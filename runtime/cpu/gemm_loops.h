// The one blocked loop nest every CPU GEMM runs (Goto/BLIS): C's columns in NC blocks, K in KC
// panels, A packed in MC-row panels, then MR x NR register tiles, each C block finished (bias,
// epilogue) while it is still in cache. What differs by precision lives in a Panels type
// (gemm.cc: fp32 FMA; gemm_bf16.cc: VDPBF16PS and AMX-BF16; gemm_int8.cc: VPDPBUSD and
// AMX-INT8): its register tile, its K unit (a float, a pair of bf16, a quad of int8), how A is
// packed, where a B sliver lies, the tile kernel and the finish. A Panels type provides
//
//   GemmPanels panels() const;      MC, KC and NC of this call
//   int mr() const, nr() const;     register tile: rows, columns
//   int64_t k_steps() const;        K in the precision's units
//   void begin_b_panel(int64_t j0, int64_t cols, int64_t p0, int64_t kc);   B block at columns
//                                   [j0, j0 + cols), K steps [p0, p0 + kc) (pack it, or find it)
//   void pack_a(int64_t i0, int64_t rows, int64_t p0, int64_t kc);          A panel
//   void tile(const GemmTile& t);   one register tile of C
//   void finish(int64_t i0, int64_t rows, int64_t j0, int64_t cols);        K complete there
//                                   (nothing left to do where its tiles finished themselves)
//
// and keeps its packed panels itself (per-thread scratch). The split between threads is
// gemm_partition.h; products of a few rows take each precision's own streaming path.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/kernel_util.h"

namespace cuvil::runtime::cpu {

// Panel sizes of one call, in rows, K steps (the precision's unit) and columns; mc and nc are
// multiples of the register tile. A kc of at least k_steps() keeps K in one piece.
struct GemmPanels {
  int64_t mc = 1, kc = 1, nc = 1;
};

// One register tile of C, as the loops hand it to Panels::tile.
struct GemmTile {
  int64_t i = 0, j = 0;      // C's first row and column (j on a sliver bound)
  int64_t ir = 0;            // the first row's offset in the packed A panel (a multiple of mr)
  int rows = 0, cols = 0;    // the valid part: 1..mr rows, 1..nr columns
  int64_t kc = 0;            // K steps of this panel
  bool accumulate = false;   // C holds the sums of earlier K panels
  bool last = false;         // K is complete with this panel: a Panels type may finish the tile
  bool next_sliver = false;  // another B sliver of this panel follows at j + nr
  int64_t row_tile = 0, row_tiles = 0;  // this tile's index among the A panel's row tiles
};

// Rows [i0, i1) x columns [j0, j1) of C (i0, j0 on register-tile bounds).
template <class Panels>
void gemm_loops(Panels& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const GemmPanels b = p.panels();
  const int mr = p.mr(), nr = p.nr();
  const int64_t steps = p.k_steps();
  for (int64_t jc = j0; jc < j1; jc += b.nc) {
    const int64_t nc = std::min(b.nc, j1 - jc);
    for (int64_t pc = 0; pc < steps || pc == 0; pc += b.kc) {
      const int64_t kc = std::min(b.kc, steps - pc);
      p.begin_b_panel(jc, nc, pc, kc);
      for (int64_t ic = i0; ic < i1; ic += b.mc) {
        const int64_t mc = std::min(b.mc, i1 - ic);
        p.pack_a(ic, mc, pc, kc);
        GemmTile t;
        t.kc = kc;
        t.accumulate = pc > 0;
        t.last = pc + kc >= steps;
        t.row_tiles = ceil_div(mc, mr);
        for (int64_t jr = 0; jr < nc; jr += nr) {
          t.j = jc + jr;
          t.cols = static_cast<int>(std::min<int64_t>(nr, nc - jr));
          t.next_sliver = jr + nr < nc;
          for (int64_t ir = 0; ir < mc; ir += mr) {
            t.i = ic + ir;
            t.ir = ir;
            t.rows = static_cast<int>(std::min<int64_t>(mr, mc - ir));
            t.row_tile = ir / mr;
            p.tile(t);
          }
        }
        if (pc + kc >= steps) p.finish(ic, mc, jc, nc);
      }
      if (steps == 0) break;
    }
  }
}

// Finishes one row's columns [j0, j0 + len) once its K is complete: bias per column, then the
// step's epilogue (a GEMM problem with `bias` and `epilogue` members).
template <class Gemm>
void finish_row(const Gemm& g, float* row, int64_t j0, int64_t len) {
  if (g.bias) {
    for (int64_t j = 0; j < len; ++j) row[j] += g.bias[j0 + j];
  }
  if (g.epilogue) g.epilogue->apply(row, len);
}

// The same for rows [i0, i0 + rows) of C (members c, ldc).
template <class Gemm>
void finish_rows(const Gemm& g, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  if (!g.bias && !g.epilogue) return;
  for (int64_t i = i0; i < i0 + rows; ++i) finish_row(g, g.c + i * g.ldc + j0, j0, cols);
}

// An edge tile computed aside (row stride ld): its valid rows x cols written to C, or added to
// it when C holds the sums of earlier K panels.
inline void store_tile_part(const float* tile, int64_t ld, float* c, int64_t ldc, int rows,
                            int cols, bool accumulate) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + tile[i * ld + j];
    }
  }
}

}  // namespace cuvil::runtime::cpu
