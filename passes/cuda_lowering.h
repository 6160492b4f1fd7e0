// cuda-lowering: the CUDA pipeline's per-op-class choice between libraries and generated kernels
// (like the CPU's select-lowering): convolutions on cuDNN or the generated implicit-GEMM kernel,
// linear layers and batched matmuls on cuBLAS, cuBLASLt or the generated tensor-core GEMM,
// attention on the generated flash kernel or the simple one. Writes node attribute "cuda.kernel"
// (runtime/cuda/attrs.h); the runtime falls back, saying why, where a choice cannot run a node
// (runtime/cuda/kernel_choice.h).
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class CudaLoweringPass final : public Pass {
 public:
  std::string_view name() const override { return "cuda-lowering"; }
  std::string_view summary() const override {
    return "choose per op class between cuBLAS/cuBLASLt/cuDNN and generated CUDA kernels";
  }
  bool applies_to(std::string_view target) const override { return target == "cuda"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
