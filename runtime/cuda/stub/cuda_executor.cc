// A build without the CUDA toolkit: the executor only says why it cannot run.
#include "runtime/cuda/cuda_executor.h"

#include "base/error.h"

namespace cuvil::runtime::cuda {

struct CudaExecutor::State {};

CudaExecutor::CudaExecutor(Plan, int) {
  require_cuda("--target cuda");
}
CudaExecutor::~CudaExecutor() = default;
std::vector<ir::Tensor> CudaExecutor::run(const std::vector<ir::Tensor>&) {
  return {};
}
void CudaExecutor::upload_inputs(const std::vector<ir::Tensor>&) {}
double CudaExecutor::launch() {
  return 0;
}
std::vector<ir::Tensor> CudaExecutor::download_outputs() {
  return {};
}
std::vector<double> CudaExecutor::step_times_ns() {
  return {};
}
std::vector<double> CudaExecutor::cupti_step_busy_ns() {
  return {};
}
const Plan& CudaExecutor::plan() const {
  CUVIL_CHECK(false, "no CUDA backend");
}
const std::vector<StepLowering>& CudaExecutor::lowering() const {
  CUVIL_CHECK(false, "no CUDA backend");
}
const DeviceLayout& CudaExecutor::layout() const {
  CUVIL_CHECK(false, "no CUDA backend");
}
const DeviceInfo& CudaExecutor::device() const {
  CUVIL_CHECK(false, "no CUDA backend");
}
const std::vector<CaptureSegment>& CudaExecutor::capture_segments() const {
  CUVIL_CHECK(false, "no CUDA backend");
}
std::string CudaExecutor::summary() const {
  return "";
}

DevicePeak device_peak(bool) {
  require_cuda("device peak");
  return {};
}

}  // namespace cuvil::runtime::cuda
