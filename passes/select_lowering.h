// select-lowering: the pipeline's "dialect choice". For each op class (depthwise convolutions,
// 1x1 convolutions, 3x3 stride-1 convolutions, other convolutions, linear, matmul) a choice
// parameter says which lowering runs it: a generated kernel (GEMM, im2col + GEMM, direct,
// Winograd for 3x3, depthwise) or the oneDNN library. The pass writes the kernel's name into node
// attribute "impl"; nodes that already carry an "impl" (set by the user or an earlier pass) keep
// it. A choice that cannot run a node (the direct kernel on NCHW, 1x1-as-GEMM on a strided conv)
// falls back to the class's universal kernel and is counted in graph annotation
// "select-lowering.fallbacks". Convolutions the layout pass made blocked (nchw16c) run
// conv2d.direct_nchw16c: "direct" names it, other choices fall back to it.
#pragma once

#include <string>

#include "passes/pass.h"

namespace cuvil::passes {

class SelectLoweringPass final : public Pass {
 public:
  std::string_view name() const override { return "select-lowering"; }
  std::string_view summary() const override {
    return "choose per op class between generated kernels and the oneDNN library";
  }
  bool applies_to(std::string_view target) const override { return target == "cpu"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

// The op class select-lowering puts a conv2d node in: "conv_depthwise" (groups = input channels,
// runtime::cpu::is_depthwise_conv, or 2, 4 or 8 channels per group in and out,
// is_narrow_group_conv; checked first), "conv_1x1", "conv_3x3" or "conv_other".
std::string conv_class(const ir::Graph& graph, const ir::Node& node);

}  // namespace cuvil::passes
