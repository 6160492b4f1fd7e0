#include "runtime/cuda/cuda_check.h"

namespace cuvil::runtime::cuda {

std::string format_failure(const char* file, int line, const char* call, const std::string& what) {
  return std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + what;
}

std::string status_text(cudaError_t status) {
  return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
}

std::string status_text(CUresult status) {
  // The driver's own strings live in libcuda, which is not linked: the number is what we have.
  return "CUresult " + std::to_string(static_cast<int>(status));
}

std::string status_text(cublasStatus_t status) {
  return std::string(cublasGetStatusString(status)) + " (" + cublasGetStatusName(status) + ")";
}

std::string status_text(cudnnStatus_t status) {
  return cudnnGetErrorString(status);
}

std::string status_text(nvrtcResult status) {
  return nvrtcGetErrorString(status);
}

}  // namespace cuvil::runtime::cuda
