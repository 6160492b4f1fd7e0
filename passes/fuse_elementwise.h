// fuse-elementwise: folds chains of elementwise ops into the producing node's epilogue, so the
// intermediate results are never written to memory.
#pragma once

#include "passes/pass.h"
#include "passes/targets.h"

namespace cuvil::passes {

class FuseElementwisePass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-elementwise"; }
  std::string_view summary() const override {
    return "fuse chains of elementwise ops into the producer's epilogue";
  }
  bool applies_to(std::string_view target) const override { return is_known_target(target); }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
