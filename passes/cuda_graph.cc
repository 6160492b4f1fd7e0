#include "passes/cuda_graph.h"

#include "runtime/cuda/attrs.h"

namespace cuvil::passes {

std::vector<ParamSpec> CudaGraphPass::params() const {
  return {
      choice_param("capture", {"whole", "segments", "off"}, "whole",
                   "capture boundary: the whole plan as one graph, segments of segment_steps "
                   "steps, or off (stream launches)"),
      int_param("segment_steps", 1, 4096, 64, "steps per captured graph in segments mode",
                Scale::log),
  };
}

void CudaGraphPass::run(ir::Graph& graph, const ParamMap& params) const {
  // The runtime reads the first step's attributes; every node carries them so that a node
  // removed later cannot take the setting with it.
  for (ir::Node& n : graph.mutable_nodes()) {
    n.attrs.set(runtime::cuda::attrs::kCapture, param_choice(params, "capture"));
    n.attrs.set(runtime::cuda::attrs::kSegmentSteps, param_int(params, "segment_steps"));
  }
}

}  // namespace cuvil::passes
