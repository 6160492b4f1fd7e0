// Plan lowering for CUDA: which kernel or library each step gets, and the fallbacks.
#include "runtime/cuda/kernel_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "passes/pipeline.h"
#include "runtime/cuda/attrs.h"
#include "tests/cuda/cuda_test_util.h"

namespace cuvil::runtime::cuda {
namespace {

using testing::cuda_config_with;
using ::testing::HasSubstr;

std::vector<StepLowering> lowered(const ir::Graph& g, const passes::PipelineConfig& c) {
  return lower_plan(passes::compile(g, c, 1).plan);
}

TEST(CudaKernelChoice, CudaPlansCarryNoCpuKernel) {
  const passes::Compiled c =
      passes::compile(testing::linear_graph(3, 5, 7), passes::default_pipeline("cuda"), 1);
  for (const Step& s : c.plan.steps) {
    EXPECT_EQ(s.fn, nullptr) << s.node_name;
    EXPECT_EQ(s.kernel, "cuda");
    EXPECT_EQ(s.prepared, nullptr);
  }
}

TEST(CudaKernelChoice, DefaultsAreTheLibrariesInF32) {
  const auto l = lowered(testing::linear_graph(3, 5, 7), passes::default_pipeline("cuda"));
  ASSERT_EQ(l.size(), 1u);  // relu fused into the linear's epilogue
  EXPECT_EQ(l[0].kernel, "linear.cublas");
  EXPECT_EQ(l[0].library, Library::cublas);
  EXPECT_EQ(l[0].precision, Precision::f32);
  EXPECT_TRUE(l[0].fallback.empty());
  bool cudnn = false;
  for (const StepLowering& s :
       lowered(testing::conv_graph(3, 7, 7, 5), passes::default_pipeline("cuda"))) {
    cudnn = cudnn || s.kernel == "conv2d.cudnn";
  }
  EXPECT_TRUE(cudnn);
}

TEST(CudaKernelChoice, CublasLtIsChosenByThePass) {
  const auto l = lowered(testing::linear_graph(17, 5, 3),
                         cuda_config_with("cuda-lowering", "linear", std::string("cublaslt")));
  EXPECT_EQ(l[0].kernel, "linear.cublaslt");
  EXPECT_EQ(l[0].library, Library::cublaslt);
}

TEST(CudaKernelChoice, GeneratedGemmInF32FallsBackToCublasSayingWhy) {
  const auto l = lowered(testing::linear_graph(3, 5, 7),
                         cuda_config_with("cuda-lowering", "linear", std::string("generated")));
  EXPECT_EQ(l[0].requested, "linear.generated");
  EXPECT_EQ(l[0].kernel, "linear.cublas");
  EXPECT_THAT(l[0].fallback, HasSubstr("no exact fp32 mode"));
}

TEST(CudaKernelChoice, GeneratedGemmRunsInBf16) {
  passes::PipelineConfig c = cuda_config_with("cuda-lowering", "linear", std::string("generated"));
  testing::find_invocation(c, "cuda-precision")->params["linear_dtype"] = std::string("bf16");
  const auto l = lowered(testing::linear_graph(3, 5, 7), c);
  EXPECT_EQ(l[0].kernel, "linear.generated");
  EXPECT_EQ(l[0].precision, Precision::bf16);
  EXPECT_TRUE(l[0].fallback.empty());
}

TEST(CudaKernelChoice, GeneratedConvNeedsNhwc) {
  passes::PipelineConfig c = cuda_config_with("cuda-lowering", "conv", std::string("generated"));
  testing::find_invocation(c, "cuda-precision")->params["conv_dtype"] = std::string("tf32");
  testing::find_invocation(c, "layout")->params["memory_layout"] = std::string("nchw");
  auto l = lowered(testing::conv_graph(3, 7, 7, 5), c);
  EXPECT_EQ(l.back().kernel, "conv2d.cudnn");
  EXPECT_THAT(l.back().fallback, HasSubstr("nhwc"));
  testing::find_invocation(c, "layout")->params["memory_layout"] = std::string("nhwc");
  l = lowered(testing::conv_graph(3, 7, 7, 5), c);
  bool generated = false;
  for (const StepLowering& s : l) generated = generated || s.kernel == "conv2d.generated";
  EXPECT_TRUE(generated);
}

TEST(CudaKernelChoice, PrecisionAppliesToGemmClassNodesOnly) {
  Step s;
  s.op = ir::OpKind::softmax;
  s.attrs.set(attrs::kPrecision, std::string("bf16"));
  EXPECT_EQ(lower_step(s).precision, Precision::f32);
}

TEST(CudaKernelChoice, UnknownKernelIsUserErrorListingTheChoices) {
  Step s;
  s.op = ir::OpKind::linear;
  s.node_name = "fc";
  s.attrs.set(attrs::kKernel, std::string("linear.magic"));
  try {
    lower_step(s);
    FAIL() << "accepted an unknown kernel";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("node 'fc'"));
    EXPECT_THAT(e.what(), HasSubstr("linear.cublas, linear.cublaslt, linear.generated"));
  }
}

TEST(CudaKernelChoice, SoftmaxOverAnInnerAxisRunsTheSimpleKernel) {
  Step s;
  s.op = ir::OpKind::softmax;
  s.input_shapes = {{3, 7, 5}};
  s.attrs.set("axis", int64_t{1});
  const StepLowering l = lower_step(s);
  EXPECT_EQ(l.kernel, "softmax.simple");
  EXPECT_THAT(l.fallback, HasSubstr("last axis"));
  s.attrs.set("axis", int64_t{2});
  EXPECT_EQ(lower_step(s).kernel, "softmax.generated");
}

TEST(CudaKernelChoice, KernelOfAnotherOpIsRejected) {
  Step s;
  s.op = ir::OpKind::matmul;
  s.attrs.set(attrs::kKernel, std::string("conv2d.cudnn"));
  EXPECT_THROW(lower_step(s), UserError);
}

TEST(CudaKernelChoice, UnknownPrecisionIsUserError) {
  Step s;
  s.op = ir::OpKind::linear;
  s.attrs.set(attrs::kPrecision, std::string("fp8"));
  EXPECT_THROW(lower_step(s), UserError);
}

TEST(CudaKernelChoice, LargeHeadDimAttentionUsesTheSimpleKernel) {
  Step s;
  s.op = ir::OpKind::sdpa;
  s.input_shapes = {{1, 2, 3, 512}, {1, 2, 3, 512}, {1, 2, 3, 512}};
  EXPECT_EQ(lower_step(s).kernel, "sdpa.simple");
}

TEST(CudaKernelChoice, EveryStepOfEverySuiteHasACudaKernel) {
  for (const char* suite : {"resnet50", "llama3-8b", "sdxl"}) {
    SCOPED_TRACE(suite);
    const auto l = lowered(testing::tiny_suite_graph(suite), passes::default_pipeline("cuda"));
    ASSERT_FALSE(l.empty());
    std::set<std::string> kernels;
    for (const StepLowering& s : l) {
      EXPECT_FALSE(s.kernel.empty());
      kernels.insert(s.kernel);
    }
    if (std::string(suite) == "resnet50") {
      EXPECT_TRUE(kernels.count("conv2d.cudnn"));
    }
    if (std::string(suite) == "llama3-8b") {
      EXPECT_TRUE(kernels.count("linear.cublas"));
      EXPECT_TRUE(kernels.count("sdpa.generated"));
      EXPECT_TRUE(kernels.count("rope.simple"));
    }
    if (std::string(suite) == "sdxl") {
      EXPECT_TRUE(kernels.count("group_norm.generated"));
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime::cuda
