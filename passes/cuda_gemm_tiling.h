// cuda-gemm-tiling: the tile parameters compiled into the generated CUDA tensor-core GEMM /
// implicit-GEMM conv kernels (runtime/cuda/codegen): block and warp tiles, shared-memory pipeline
// stages and vector width. Written as node attributes (runtime/cuda/attrs.h); an illegal
// combination is a UserError from the generator when the plan is prepared on the GPU.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class CudaGemmTilingPass final : public Pass {
 public:
  std::string_view name() const override { return "cuda-gemm-tiling"; }
  std::string_view summary() const override {
    return "tiles, pipeline stages and vector width of generated tensor-core GEMMs and convs";
  }
  bool applies_to(std::string_view target) const override { return target == "cuda"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
