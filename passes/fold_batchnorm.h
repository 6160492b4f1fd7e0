// fold-batchnorm: an inference BatchNorm right after a convolution is an affine map per output
// channel, so it folds into the convolution's weight and bias and disappears; so does a mul or
// div by a constant per output channel (PyTorch's QAT exports of conv + BN divide by one).
#pragma once

#include "passes/pass.h"
#include "passes/targets.h"

namespace cuvil::passes {

class FoldBatchNormPass final : public Pass {
 public:
  std::string_view name() const override { return "fold-batchnorm"; }
  std::string_view summary() const override {
    return "fold batch_norm (and per-channel mul/div) after a single-use conv2d into its weight "
           "and bias";
  }
  bool applies_to(std::string_view target) const override { return is_known_target(target); }
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
