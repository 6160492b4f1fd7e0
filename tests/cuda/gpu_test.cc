// On a GPU: the suites, the GEMM libraries and graph capture against the reference interpreter.
// Each test skips with the reason when no device is usable (never on this build machine).
#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/pipeline.h"
#include "passes/reduced_precision.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/reference/interpreter.h"
#include "tests/cuda/cuda_test_util.h"

namespace cuvil::runtime::cuda {
namespace {

#define SKIP_WITHOUT_GPU()                                                    \
  do {                                                                        \
    const std::string reason = cuda_unavailable_reason();                     \
    if (!reason.empty()) GTEST_SKIP() << "no usable CUDA device: " << reason; \
  } while (0)

double worst_error(const ir::Graph& g, const passes::PipelineConfig& c) {
  const std::vector<ir::Tensor> inputs = ir::random_inputs(g, 7);
  const std::vector<ir::Tensor> expected = reference::interpret(g, inputs);
  CudaExecutor executor(passes::compile(g, c, 1).plan);
  const std::vector<ir::Tensor> actual = executor.run(inputs);
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    worst = std::max(worst, ir::max_relative_error(actual[i], expected[i]));
  }
  return worst;
}

TEST(CudaGpu, DeviceQuery) {
  SKIP_WITHOUT_GPU();
  const DeviceInfo info = device_info();
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GE(info.sm_arch(), 70);
}

TEST(CudaGpu, SuitesMatchTheReferenceInF32) {
  SKIP_WITHOUT_GPU();
  for (const char* suite : {"resnet50", "llama3-8b", "sdxl"}) {
    SCOPED_TRACE(suite);
    EXPECT_LE(worst_error(testing::tiny_suite_graph(suite), passes::default_pipeline("cuda")),
              passes::kFp32Tolerance);
  }
}

TEST(CudaGpu, EveryGemmLoweringMatches) {
  SKIP_WITHOUT_GPU();
  for (const char* impl : {"cublas", "cublaslt", "generated"}) {
    for (const char* dtype : {"f32", "tf32", "bf16", "f16"}) {
      SCOPED_TRACE(std::string(impl) + " " + dtype);
      passes::PipelineConfig c =
          testing::cuda_config_with("cuda-lowering", "linear", std::string(impl));
      testing::find_invocation(c, "cuda-precision")->params["linear_dtype"] = std::string(dtype);
      EXPECT_LE(worst_error(testing::linear_graph(17, 67, 33), c), passes::precision_tolerance(c));
    }
  }
}

TEST(CudaGpu, EveryConvLoweringMatches) {
  SKIP_WITHOUT_GPU();
  for (const char* impl : {"cudnn", "generated"}) {
    for (const char* dtype : {"f32", "tf32", "bf16"}) {
      SCOPED_TRACE(std::string(impl) + " " + dtype);
      passes::PipelineConfig c =
          testing::cuda_config_with("cuda-lowering", "conv", std::string(impl));
      testing::find_invocation(c, "cuda-precision")->params["conv_dtype"] = std::string(dtype);
      EXPECT_LE(worst_error(testing::conv_graph(3, 17, 13, 7), c), passes::precision_tolerance(c));
    }
  }
}

TEST(CudaGpu, CaptureModesGiveTheSameOutputs) {
  SKIP_WITHOUT_GPU();
  const ir::Graph g = testing::tiny_suite_graph("resnet50");
  for (const char* mode : {"whole", "segments", "off"}) {
    SCOPED_TRACE(mode);
    EXPECT_LE(worst_error(g, testing::cuda_config_with("cuda-graph", "capture", std::string(mode))),
              passes::kFp32Tolerance);
  }
}

TEST(CudaGpu, CapturedReplayIsRepeatable) {
  SKIP_WITHOUT_GPU();
  const ir::Graph g = testing::tiny_suite_graph("llama3-8b");
  CudaExecutor executor(passes::compile(g, passes::default_pipeline("cuda"), 1).plan);
  executor.upload_inputs(ir::random_inputs(g, 3));
  executor.launch();
  const auto first = executor.download_outputs();
  for (int i = 0; i < 3; ++i) EXPECT_GT(executor.launch(), 0);
  const auto again = executor.download_outputs();
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].data, again[i].data);
  for (const CaptureSegment& s : executor.capture_segments()) {
    EXPECT_TRUE(s.captured) << s.reason;
  }
  EXPECT_EQ(executor.step_times_ns().size(), executor.plan().steps.size());
}

TEST(CudaGpu, CuptiAttributesBusyTimeToSteps) {
  SKIP_WITHOUT_GPU();
  const ir::Graph g = testing::tiny_suite_graph("resnet50");
  CudaExecutor executor(passes::compile(g, passes::default_pipeline("cuda"), 1).plan);
  executor.upload_inputs(ir::random_inputs(g, 3));
  std::vector<double> busy;
  try {
    busy = executor.cupti_step_busy_ns();
  } catch (const UserError& e) {
    GTEST_SKIP() << "CUPTI cannot trace here: " << e.what();
  }
  ASSERT_EQ(busy.size(), executor.plan().steps.size());
  double total = 0;
  for (double b : busy) total += b;
  EXPECT_GT(total, 0);
}

TEST(CudaGpu, DevicePeakIsPositive) {
  SKIP_WITHOUT_GPU();
  const DevicePeak p = device_peak();
  EXPECT_GT(p.bf16_tflops, 0);
  EXPECT_GT(p.hbm_gbps, 0);
}

}  // namespace
}  // namespace cuvil::runtime::cuda
