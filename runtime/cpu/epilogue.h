// A step's fused elementwise epilogue (Step::epilogue), bound to the step's operands. Kernels
// apply it to parts of their output while those are hot in cache (GEMM/conv output tiles), or
// call apply_all for a blocked pass over the whole output. Construction does not allocate.
#pragma once

#include <cstdint>

#include "runtime/cpu/broadcast.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

inline constexpr int kMaxEpilogueSteps = 16;

// The epilogue in the form a register tile applies to its accumulators before it stores them
// (Epilogue::lanes()): every step a few vector instructions (relu, clip, leaky_relu; add, sub,
// mul, div), every operand read at the element (the output's shape), at its column (one value
// per index of the output's last dim) or once (a scalar). The output is then written once, with
// no second pass over it. epilogue_lanes_avx512.h and epilogue_lanes_avx2.h apply it to
// vectors, apply_lanes() below to plain floats.
struct LaneEpilogue {
  enum class Operand : uint8_t { none, element, column, scalar };
  struct Step {
    ir::OpKind op = ir::OpKind::relu;
    Operand operand = Operand::none;
    const float* src = nullptr;  // binary steps: the operand's first element
    float a = 0.0f, b = 0.0f;    // clip's bounds, leaky_relu's slope
  };
  const float* out = nullptr;  // the step's output: an element's index is its address - out
  int64_t columns = 0;         // the output's last dim (what a column operand is indexed by)
  Step steps[kMaxEpilogueSteps];
  int count = 0;
};

// Applies `e` to output elements y[0, n), which already hold the kernel's result (bias
// included); col is y[0]'s column. The portable tiles and the edges of vector tiles use it.
void apply_lanes(const LaneEpilogue& e, float* y, int64_t col, int64_t n);

class Epilogue {
 public:
  static constexpr int kMaxSteps = kMaxEpilogueSteps;

  // `out` is the step's output buffer; binary steps read step inputs broadcast to its shape.
  Epilogue(const Step& step, const float* const* in, float* out);
  bool empty() const { return count_ == 0; }

  // Applies every step, in order, to output elements [p, p + len) (p points into the output).
  void apply(float* p, int64_t len) const;
  // Applies it to the whole output in cache-sized blocks, in parallel.
  void apply_all(ThreadPool& pool) const;
  // The same steps in register-tile form, or null when one of them has none (then a kernel
  // calls apply on what it stored). Elements and columns are those of the step's output.
  const LaneEpilogue* lanes() const { return has_lanes_ ? &lanes_ : nullptr; }

 private:
  struct Item {
    ir::OpKind op;
    ir::UnaryParams params;      // unary steps only
    const float* src = nullptr;  // binary steps only
    Broadcast bc;
  };
  Item items_[kMaxSteps];
  int count_ = 0;
  float* out_;
  int64_t numel_;
  LaneEpilogue lanes_;
  bool has_lanes_ = true;
};

// Whether a GEMM's register tiles can finish `epi` (null: none) in registers, for C of `columns`
// columns: every step has a lane form and C's columns are the output's last dim. Then *lanes is
// what to apply there (null when there are no steps); else the kernel applies `epi` to what it
// stored.
inline bool tiles_finish_in_registers(const Epilogue* epi, int64_t columns,
                                      const LaneEpilogue** lanes) {
  *lanes = nullptr;
  if (!epi) return true;
  const LaneEpilogue* l = epi->lanes();
  if (!l || l->columns != columns) return false;
  if (l->count > 0) *lanes = l;
  return true;
}

}  // namespace cuvil::runtime::cpu
