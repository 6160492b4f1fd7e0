// The CUDA pipeline as configuration: target-aware passes, the shipped configs/*.cuda.cuvilpass,
// and the FILE:LINE: FIELD errors for passes of the wrong target.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/cuvilpass.h"
#include "passes/pipeline.h"
#include "passes/reduced_precision.h"
#include "passes/registry.h"
#include "tests/base/user_error_of.h"
#include "tests/cuda/cuda_test_util.h"

namespace cuvil::passes {
namespace {

using ::testing::HasSubstr;

std::string rejection(const std::string& text) {
  return user_error_of([&] { parse_cuvilpass(text, "bad.cuvilpass"); });
}

TEST(CudaConfig, DefaultPipelineListsSharedAndCudaPassesInRegistryOrder) {
  std::vector<std::string> names;
  for (const PassInvocation& p : default_pipeline("cuda").passes) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"recognize-patterns", "fold-batchnorm", "layout",
                                             "fuse-elementwise", "memory-plan", "cuda-lowering",
                                             "cuda-precision", "cuda-attention-tiling",
                                             "cuda-gemm-tiling", "cuda-graph"}));
}

TEST(CudaConfig, CpuPipelineHasNoCudaPass) {
  for (const PassInvocation& p : default_pipeline("cpu").passes) {
    EXPECT_EQ(p.name.rfind("cuda-", 0), std::string::npos) << p.name;
  }
}

TEST(CudaConfig, EveryPassAppliesToAtLeastOneTarget) {
  for (const auto& pass : pass_registry()) {
    EXPECT_FALSE(applicable_targets(*pass).empty()) << pass->name();
  }
}

TEST(CudaConfig, ShippedCudaConfigsAreTheDefaultPipeline) {
  const std::string hash = config_hash(default_pipeline("cuda"));
  for (const char* suite : {"resnet50", "llama3-8b", "sdxl", "model"}) {
    const std::string path =
        std::string(CUVIL_SOURCE_DIR) + "/configs/" + suite + ".cuda.cuvilpass";
    const PipelineConfig c = load_cuvilpass(path);
    EXPECT_EQ(c.target, "cuda") << path;
    EXPECT_EQ(c.suite, std::string(suite) == "model" ? "" : suite) << path;
    EXPECT_EQ(config_hash(c), hash) << path << " differs from default_pipeline(\"cuda\")";
  }
}

TEST(CudaConfig, CpuPassInCudaConfigIsFileLineFieldError) {
  const std::string message = rejection(
      "cuvil_pass_version: 1\ntarget: cuda\npasses:\n  - name: fold-batchnorm\n  - name: "
      "select-lowering\n");
  EXPECT_THAT(message, HasSubstr("bad.cuvilpass:5: passes[1].name: "));
  EXPECT_THAT(message, HasSubstr("does not apply to target cuda"));
  EXPECT_THAT(message, HasSubstr("it applies to: cpu"));
}

TEST(CudaConfig, CudaPassInCpuConfigIsFileLineFieldError) {
  const std::string message =
      rejection("cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: cuda-graph\n");
  EXPECT_THAT(message, HasSubstr("bad.cuvilpass:4: passes[0].name: "));
  EXPECT_THAT(message, HasSubstr("does not apply to target cpu (it applies to: cuda)"));
}

TEST(CudaConfig, SharedPassAppliesToBothTargets) {
  EXPECT_EQ(applicable_targets(*find_pass("memory-plan")), "cpu, cuda");
  EXPECT_EQ(applicable_targets(*find_pass("gemm-tiling")), "cpu");
  EXPECT_EQ(applicable_targets(*find_pass("cuda-gemm-tiling")), "cuda");
}

TEST(CudaConfig, CudaParametersAreRangeChecked) {
  const std::string message = rejection(
      "cuvil_pass_version: 1\ntarget: cuda\npasses:\n  - name: cuda-graph\n    params: { "
      "capture: sometimes }\n");
  EXPECT_THAT(message, HasSubstr("bad.cuvilpass:5: passes[0].params.capture: "));
  EXPECT_THAT(message, HasSubstr("whole|segments|off"));
  EXPECT_THAT(rejection("cuvil_pass_version: 1\ntarget: cuda\npasses:\n  - name: "
                        "cuda-gemm-tiling\n    params: { stages: 9 }\n"),
              HasSubstr("out of range"));
}

TEST(CudaConfig, PipelineBuiltInCodeRejectsAPassOfAnotherTarget) {
  PipelineConfig c = default_pipeline("cuda");
  c.passes.push_back({"threading", {}});
  ir::Graph g = runtime::cuda::testing::linear_graph(3, 5, 7);
  EXPECT_THROW(run_pipeline(g, c), UserError);
}

TEST(CudaConfig, PrecisionToleranceSeesCudaPrecision) {
  std::string label;
  EXPECT_EQ(precision_tolerance(default_pipeline("cuda"), &label), kFp32Tolerance);
  EXPECT_EQ(label, "f32");
  const PipelineConfig bf16 = runtime::cuda::testing::cuda_config_with(
      "cuda-precision", "linear_dtype", std::string("bf16"));
  EXPECT_EQ(precision_tolerance(bf16, &label), kBf16Tolerance);
  EXPECT_EQ(label, "bf16");
  const PipelineConfig tf32 =
      runtime::cuda::testing::cuda_config_with("cuda-precision", "conv_dtype", std::string("tf32"));
  EXPECT_EQ(precision_tolerance(tf32, &label), kBf16Tolerance);
  EXPECT_EQ(label, "tf32");
}

}  // namespace
}  // namespace cuvil::passes
