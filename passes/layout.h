// layout: puts every layout-aware op (conv, norms, pools, upsample) in one memory layout and
// inserts transposes only where the layout really changes, so graph inputs and outputs keep
// their original shapes. Parameter blocked_convs moves chosen conv classes (groups 1) to the
// blocked nchw16c layout instead, with the pools that read them; conversions to and from it pad
// channels to a multiple of 16 (concat with zeros, reshape, transpose) and slice them back.
#pragma once

#include "passes/pass.h"
#include "passes/targets.h"

namespace cuvil::passes {

class LayoutPass final : public Pass {
 public:
  std::string_view name() const override { return "layout"; }
  std::string_view summary() const override {
    return "assign nchw, nhwc or (chosen convs) nchw16c to layout-aware ops, converting only at "
           "layout boundaries";
  }
  bool applies_to(std::string_view target) const override { return is_known_target(target); }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
