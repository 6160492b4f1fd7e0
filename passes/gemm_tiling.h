// gemm-tiling: the GEMMs' register tile, cache blocks and weight prepacking for every node that
// can run on one (linear, matmul, conv2d): the fp32 packed GEMM's (mr_nr, mc, kc, nc, prepack,
// prefetch), and the bf16 and int8 GEMMs' own panels (bf16_mc/kc/nc, int8_mc). Sets the node
// attributes of runtime/cpu/attrs.h that lowering copies to the step and the kernels' schedule
// hooks read (gemm_schedule.h, lowp_gemm_schedule.h).
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class GemmTilingPass final : public Pass {
 public:
  std::string_view name() const override { return "gemm-tiling"; }
  std::string_view summary() const override {
    return "GEMM register tile, MC/KC/NC cache blocks (fp32, bf16, int8) and weight prepacking";
  }
  bool applies_to(std::string_view target) const override { return target == "cpu"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
