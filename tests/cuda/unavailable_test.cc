// Without a driver or device the backend says exactly why, and nothing else breaks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/pipeline.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/device.h"
#include "tests/cuda/cuda_test_util.h"

namespace cuvil::runtime::cuda {
namespace {

using ::testing::HasSubstr;

TEST(CudaUnavailable, MissingDriverNamesLibcuda) {
  EXPECT_EQ(unavailable_reason_from("libcuda.so.1: cannot open shared object file", 0, "", 0),
            "no CUDA driver (libcuda.so.1 not found: libcuda.so.1: cannot open shared object "
            "file)");
}

TEST(CudaUnavailable, NoDevice) {
  EXPECT_THAT(unavailable_reason_from("", 0, "", 0), HasSubstr("no CUDA device"));
}

TEST(CudaUnavailable, DriverErrorIsQuoted) {
  EXPECT_THAT(unavailable_reason_from("", 100, "no CUDA-capable device is detected", 0),
              HasSubstr("no CUDA-capable device is detected"));
}

TEST(CudaUnavailable, UsableDeviceHasNoReason) {
  EXPECT_EQ(unavailable_reason_from("", 0, "", 1), "");
}

TEST(CudaUnavailable, ExecutorRefusesWithTheReason) {
  const std::string reason = cuda_unavailable_reason();
  if (reason.empty()) GTEST_SKIP() << "a CUDA device is usable here";
  const Plan plan =
      passes::compile(testing::linear_graph(3, 5, 7), passes::default_pipeline("cuda"), 1).plan;
  try {
    CudaExecutor executor(plan);
    FAIL() << "constructed without a device";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr(reason));
    EXPECT_THAT(e.what(), HasSubstr("--target cuda"));
  }
  EXPECT_THROW(require_cuda("x"), UserError);
  EXPECT_THROW(device_peak(), UserError);
}

}  // namespace
}  // namespace cuvil::runtime::cuda
