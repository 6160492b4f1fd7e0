// conv-tiling: the schedule of the direct NHWC convolution kernel (conv2d.direct_nhwc): its
// register tile, how threads split the work, how input channels are summed and whether weights
// are prefetched. Sets node attributes "conv.vectors", "conv.partition",
// "conv.channels_per_pass" and "conv.prefetch_weights" on conv2d nodes; the kernel reads them
// once at lowering (runtime/cpu/conv_direct_nhwc.cc). Other conv lowerings ignore them.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class ConvTilingPass final : public Pass {
 public:
  std::string_view name() const override { return "conv-tiling"; }
  std::string_view summary() const override {
    return "direct NHWC convolution: register tile, thread split and input-channel passes";
  }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
