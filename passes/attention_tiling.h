// attention-tiling: chooses the attention kernel and its tile sizes. Sets node attributes on every
// sdpa node: "impl" (sdpa.auto | sdpa.flash | sdpa.blocked; an impl already on the node is kept),
// "attention.block_q" (stacked query rows per tile) and "attention.block_kv" (keys per tile).
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class AttentionTilingPass final : public Pass {
 public:
  std::string_view name() const override { return "attention-tiling"; }
  std::string_view summary() const override {
    return "choose the attention kernel (flash / blocked) and its query and key tile sizes";
  }
  bool applies_to(std::string_view target) const override { return target == "cpu"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
