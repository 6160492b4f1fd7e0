// reduced-precision: runs linear, conv2d and matmul nodes in bf16 (AVX512_BF16, fp32
// accumulation) or int8 (AVX512_VNNI: per-output-channel s8 weights, dynamic per-tensor u8
// activations) by choosing their reduced-precision kernels (node attr "impl") and recording
// "precision" on the node. Off (f32) by default: precision changes accuracy, so it is the user's
// or the tuner's choice. Weights are converted once at lowering, never in the measured loop.
#pragma once

#include <string>

#include "passes/cuvilpass.h"
#include "passes/pass.h"

namespace cuvil::passes {

// Stated accuracy of whole networks against the fp32 reference interpreter
// (ir::max_relative_error), measured on the suites' verify graphs. bf16: single GEMMs stay
// under 1.1e-2 and Llama layers under 1.5e-2, but rounding compounds through the deep SDXL UNet
// (bf16 convs measured up to 5.4e-2 over ~200 random configs), so the end-to-end bound is 1e-1.
// int8 (dynamic per-tensor activations): 5e-2 holds for ResNet-50; on transformer blocks it
// measures 5e-2..2e-1 and is not searched there (configs/search/*.yaml).
inline constexpr double kFp32Tolerance = 1e-4;
inline constexpr double kBf16Tolerance = 1e-1;
inline constexpr double kInt8Tolerance = 5e-2;

class ReducedPrecisionPass final : public Pass {
 public:
  std::string_view name() const override { return "reduced-precision"; }
  std::string_view summary() const override {
    return "run linear/conv2d/matmul in bf16 (avx512_bf16) or int8 (avx512_vnni); f32 by default";
  }
  bool applies_to(std::string_view target) const override { return target == "cpu"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

// The accuracy bound a compiled pipeline must meet: 1e-4 when the config runs everything in
// f32, else the loosest bound of the precisions it asks for. `label` (optional) gets "f32",
// "bf16" or "int8".
double precision_tolerance(const PipelineConfig& config, std::string* label = nullptr);

}  // namespace cuvil::passes
