// gemm-tiling: the GEMM's register tile, cache blocks and weight prepacking for every node that
// runs on the packed GEMM (linear, matmul, conv2d). Sets node attributes "gemm.mr_nr",
// "gemm.mc", "gemm.kc", "gemm.nc", "gemm.prepack" that lowering copies to the step and the
// kernel reads (runtime/cpu/gemm.h gemm_blocking).
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class GemmTilingPass final : public Pass {
 public:
  std::string_view name() const override { return "gemm-tiling"; }
  std::string_view summary() const override {
    return "GEMM register tile, MC/KC/NC cache blocks and constant-weight prepacking";
  }
  bool applies_to(std::string_view target) const override { return target == "cpu"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
