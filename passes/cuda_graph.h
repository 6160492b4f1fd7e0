// cuda-graph: CUDA Graph capture of the Plan on the GPU. The whole plan is captured once and
// replayed with one launch per run, or segments of at most `segment_steps` steps, or nothing
// (stream launches). Steps whose capture is illegal, and segments whose capture fails, run as
// stream launches; the runtime says which and why (runtime/cuda/capture_plan.h).
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class CudaGraphPass final : public Pass {
 public:
  std::string_view name() const override { return "cuda-graph"; }
  std::string_view summary() const override {
    return "capture the plan (or segments of it) as CUDA Graphs and replay them";
  }
  bool applies_to(std::string_view target) const override { return target == "cuda"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
