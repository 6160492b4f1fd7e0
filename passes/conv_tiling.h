// conv-tiling: the schedule of the generated NHWC convolution kernels (conv2d.direct_nhwc and
// conv2d.winograd_nhwc): the register tile, how threads split the work, how input channels are
// summed, whether weights are prefetched and the Winograd output tile and block. Sets node
// attributes "conv.vectors", "conv.partition", "conv.channels_per_pass", "conv.prefetch_weights",
// "conv.winograd_tile" and "conv.winograd_block_kib" on conv2d nodes; the kernels read them
// once at lowering (runtime/cpu/conv_direct_nhwc.cc, conv_winograd_nhwc.cc). Other conv
// lowerings ignore them.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class ConvTilingPass final : public Pass {
 public:
  std::string_view name() const override { return "conv-tiling"; }
  std::string_view summary() const override {
    return "NHWC convolutions: register tile, thread split, input-channel passes, Winograd tile";
  }
  bool applies_to(std::string_view target) const override { return target == "cpu"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
