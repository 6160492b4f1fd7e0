// layout: puts every layout-aware op (conv, norms, pools, upsample) in one memory layout and
// inserts transposes only where the layout really changes, so graph inputs and outputs keep
// their original shapes.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class LayoutPass final : public Pass {
 public:
  std::string_view name() const override { return "layout"; }
  std::string_view summary() const override {
    return "assign nchw or nhwc to layout-aware ops, transposing only at layout boundaries";
  }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
