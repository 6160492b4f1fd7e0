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
  // Plan-wide: lowering copies the graph's settings into the plan (runtime/cuda/capture_plan.h).
  graph.settings.set(runtime::cuda::attrs::kCapture, param_choice(params, "capture"));
  graph.settings.set(runtime::cuda::attrs::kSegmentSteps, param_int(params, "segment_steps"));
}

}  // namespace cuvil::passes
