// A step's fused elementwise epilogue (Step::epilogue), bound to the step's operands. Kernels
// apply it to parts of their output while those are hot in cache (GEMM/conv output tiles), or
// call apply_all for a blocked pass over the whole output. Construction does not allocate.
#pragma once

#include <cstdint>

#include "runtime/cpu/broadcast.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

class Epilogue {
 public:
  static constexpr int kMaxSteps = 16;

  // `out` is the step's output buffer; binary steps read step inputs broadcast to its shape.
  Epilogue(const Step& step, const float* const* in, float* out);
  bool empty() const { return count_ == 0; }

  // Applies every step, in order, to output elements [p, p + len) (p points into the output).
  void apply(float* p, int64_t len) const;
  // Applies it to the whole output in cache-sized blocks, in parallel.
  void apply_all(ThreadPool& pool) const;

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
};

}  // namespace cuvil::runtime::cpu
