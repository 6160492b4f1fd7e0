// recognize-patterns: subgraphs that exporters write out op by op become the IR's own ops, so
// the fused kernels run them: LayerNorm (reduce_mean, sub, pow, reduce_mean, add, sqrt, div [,
// mul, add]), exact GELU (x * 0.5 * (1 + erf(x / sqrt 2)) in its exported associations), SiLU
// (x * sigmoid(x)), HardSwish (x * hard_sigmoid(x) with alpha 1/6, or x * clip(x + 3, 0, 6) / 6)
// and attention (matmul(q, k^T) [* scale] -> softmax -> matmul(., v) becomes sdpa). Each rewrite
// only fires when the intermediate values have no other users, so it never changes what is
// computed; `cuvil-bench verify --each-pass` checks that against the reference interpreter.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

class RecognizePatternsPass final : public Pass {
 public:
  std::string_view name() const override { return "recognize-patterns"; }
  std::string_view summary() const override {
    return "rewrite decomposed LayerNorm, GELU, SiLU, HardSwish and attention into fused ops";
  }
  std::vector<ParamSpec> params() const override;
  bool applies_to(std::string_view target) const override;
  bool tuned_by_default() const override { return false; }
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
