// cuda-attention-tiling: the tile parameters compiled into the generated CUDA flash attention
// kernel (runtime/cuda/codegen): query and key/value block sizes and warps. Written as node
// attributes (runtime/cuda/attrs.h); an illegal combination is a UserError from the generator
// when the plan is prepared on the GPU.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class CudaAttentionTilingPass final : public Pass {
 public:
  std::string_view name() const override { return "cuda-attention-tiling"; }
  std::string_view summary() const override {
    return "query/key block sizes and warps of the generated flash attention kernel";
  }
  bool applies_to(std::string_view target) const override { return target == "cuda"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
