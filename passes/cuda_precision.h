// cuda-precision: the operand type of GEMM-class nodes on the GPU (linear, matmul, conv2d), with
// fp32 accumulation: f32 (exact, on the libraries), tf32 (tensor cores on f32 data), bf16 or f16
// (weights uploaded once as 16-bit copies, activations converted per call). Writes node attribute
// "cuda.precision"; bf16 weights read only by bf16 nodes get dtype bf16. Everything else stays
// fp32. Off (f32) by default: precision changes accuracy, so it is the user's or tuner's choice.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class CudaPrecisionPass final : public Pass {
 public:
  std::string_view name() const override { return "cuda-precision"; }
  std::string_view summary() const override {
    return "run GPU linear/matmul/conv2d in f32, tf32, bf16 or f16 (fp32 accumulation)";
  }
  bool applies_to(std::string_view target) const override { return target == "cuda"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
