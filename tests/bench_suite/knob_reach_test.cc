// Every registered CPU knob reaches a Plan step (bench_suite/reach.h) in some built-in suite at
// its lightest rung: a knob that reaches nothing anywhere is a phantom the tuner would search
// and SHAP would credit with noise. Exceptions are listed with the reason.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "bench_suite/reach.h"
#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/quantize.h"

namespace cuvil::bench {
namespace {

// Knobs that reach no step of any built-in suite's lightest rung, and why that is accepted.
const std::map<std::string, std::string>& exceptions() {
  static const std::map<std::string, std::string> known = {
      // The built-in suites are built from fused ops (layer_norm, gelu, silu, hard_swish, sdpa)
      // directly: these rewrites only find their patterns in imported ONNX models.
      {"recognize-patterns.layer_norm", "built-ins have no decomposed pattern (ONNX models do)"},
      {"recognize-patterns.gelu", "built-ins have no decomposed pattern (ONNX models do)"},
      {"recognize-patterns.silu", "built-ins have no decomposed pattern (ONNX models do)"},
      {"recognize-patterns.hard_swish", "built-ins have no decomposed pattern (ONNX models do)"},
      {"recognize-patterns.attention", "built-ins have no decomposed pattern (ONNX models do)"},
      {"select-lowering.conv_depthwise",
       "no depthwise or narrow grouped convolution in resnet50, llama3-8b, sdxl"},
      // Attention is sdpa; no built-in multiplies two activations with a matmul node.
      {"select-lowering.matmul", "no matmul node in the built-ins (attention is sdpa)"},
      {"reduced-precision.matmul_dtype", "no matmul node in the built-ins (attention is sdpa)"},
  };
  return known;
}

// The bf16 GEMM runs on any AVX-512 CPU (VDPBF16PS, or its weights widened to fp32).
bool bf16_gemm_runs() {
  return runtime::cpu::cpu_has_avx512();
}
// Reduced precision runs only where the CPU has the instructions; elsewhere its nodes stay f32
// and the knobs that pick it reach nothing (as tune then leaves them out).
bool reduced_precision_runs() {
  return bf16_gemm_runs() || runtime::cpu::cpu_has_avx512_vnni();
}
bool excepted(const std::string& knob) {
  if (!reduced_precision_runs() &&
      (knob == "reduced-precision.linear_dtype" || knob == "reduced-precision.conv_dtype" ||
       knob == "reduced-precision.min_k")) {
    return true;
  }
  // The bf16 and int8 GEMMs' panels reach a step only where those GEMMs run; attention has only
  // a bf16 reduced precision.
  if (!bf16_gemm_runs() && knob.rfind("gemm-tiling.bf16_", 0) == 0) return true;
  if (!runtime::cpu::cpu_has_avx512_bf16() && knob == "reduced-precision.attention_dtype") {
    return true;
  }
  if (!runtime::cpu::cpu_has_avx512_vnni() && knob == "gemm-tiling.int8_mc") return true;
  return exceptions().count(knob) != 0;
}

const std::map<std::string, RungReach>& lightest_rungs() {
  static const std::map<std::string, RungReach> reach = [] {
    std::map<std::string, RungReach> out;
    for (const char* name : {"resnet50", "llama3-8b", "sdxl"}) {
      const Suite& suite = find_suite(name);
      const Rung rung = select_rungs(load_suite_ladder(suite), "").front();
      out[name] = knob_reach(suite, rung, passes::default_pipeline("cpu"));
    }
    return out;
  }();
  return reach;
}

TEST(KnobReachSuites, EveryRegisteredKnobReachesAStepSomewhere) {
  std::string phantoms;
  for (const std::string& knob : registered_knobs("cpu")) {
    bool reached = false;
    for (const auto& [suite, r] : lightest_rungs()) reached = reached || r.reaches(knob);
    if (reached) {
      EXPECT_EQ(exceptions().count(knob), 0u)
          << knob << " reaches a step now: take it off the exceptions";
    } else if (!excepted(knob)) {
      phantoms += " " + knob;
    }
  }
  EXPECT_TRUE(phantoms.empty()) << "registered knobs that reach no step of resnet50, llama3-8b "
                                   "or sdxl at their lightest rung:"
                                << phantoms;
}

TEST(KnobReachSuites, GemmTilingAtResNet50B1) {
  // Issue 16: under the default pipeline no GEMM of ResNet-50 at b1 takes gemm-tiling (its one
  // linear layer has m = 1 and reads the weight in place; its convolutions run direct or
  // Winograd kernels). Convolutions lowered to im2col or 1x1-as-GEMM (another conv choice, or
  // NCHW, where the direct kernels fall back) do take it.
  const RungReach& r = lightest_rungs().at("resnet50");
  EXPECT_EQ(r.rung, "b1");
  ASSERT_TRUE(r.reaches("gemm-tiling.mc"));
  EXPECT_NE(r.only_under.count("gemm-tiling.mc"), 0u) << "reached under the default pipeline";
  for (const auto& [kernel, n] : r.steps.at("gemm-tiling.mc")) {
    EXPECT_TRUE(kernel == "conv2d.im2col" || kernel == "conv2d.gemm_1x1") << kernel;
  }
  EXPECT_FALSE(r.reaches("gemm-tiling.prepack_weights"));  // the m = 1 linear packs nothing
  EXPECT_TRUE(r.reaches("conv-tiling.vectors"));
  EXPECT_EQ(r.only_under.count("conv-tiling.vectors"), 0u);
  EXPECT_TRUE(r.plan_wide.count("threading.threads"));
}

TEST(KnobReachSuites, ReducedPrecisionGemmsTakeTheirOwnPanels) {
  // Issue 16: the bf16 and int8 GEMMs carried fixed panels that no knob reached. Under the
  // variant that lowers ResNet-50's convolutions to them, their own gemm-tiling knobs reach
  // those steps, and the fp32 GEMM's register tile reaches none of them.
  const RungReach& r = lightest_rungs().at("resnet50");
  if (bf16_gemm_runs()) {
    ASSERT_TRUE(r.reaches("gemm-tiling.bf16_kc"));
    EXPECT_NE(r.only_under.count("gemm-tiling.bf16_kc"), 0u) << "the default pipeline is fp32";
    for (const auto& [kernel, n] : r.steps.at("gemm-tiling.bf16_kc")) {
      EXPECT_EQ(kernel, "conv2d.bf16");
    }
  }
  if (runtime::cpu::cpu_has_avx512_vnni()) {
    ASSERT_TRUE(r.reaches("gemm-tiling.int8_mc"));
    for (const auto& [kernel, n] : r.steps.at("gemm-tiling.int8_mc")) {
      EXPECT_EQ(kernel, "conv2d.int8");
    }
  }
  for (const auto& [kernel, n] : r.steps.at("gemm-tiling.mr_nr")) {
    EXPECT_TRUE(kernel.find("bf16") == std::string::npos &&
                kernel.find("int8") == std::string::npos)
        << kernel;
  }
}

}  // namespace
}  // namespace cuvil::bench
