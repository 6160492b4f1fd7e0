// Error checking on every CUDA call: a failing call becomes a CudaError (a UserError: the device,
// driver or its memory said no, not a bug in the caller's logic) naming the file, the line and the
// call's text. One macro per status type: runtime (cudaError_t), driver (CUresult), cuBLAS,
// cuBLASLt (cublasStatus_t), cuDNN and NVRTC.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>  // CUresult only: the driver library itself is never linked
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nvrtc.h>

#include <string>

#include "base/error.h"

namespace cuvil::runtime::cuda {

class CudaError : public UserError {
 public:
  explicit CudaError(const std::string& message) : UserError(message) {}
};

// "file.cc:42: cudaMalloc(&p, n) failed: out of memory (cudaErrorMemoryAllocation)".
std::string format_failure(const char* file, int line, const char* call, const std::string& what);

std::string status_text(cudaError_t status);
std::string status_text(CUresult status);
std::string status_text(cublasStatus_t status);
std::string status_text(cudnnStatus_t status);
std::string status_text(nvrtcResult status);

inline bool succeeded(cudaError_t s) {
  return s == cudaSuccess;
}
inline bool succeeded(CUresult s) {
  return s == CUDA_SUCCESS;
}
inline bool succeeded(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS;
}
inline bool succeeded(cudnnStatus_t s) {
  return s == CUDNN_STATUS_SUCCESS;
}
inline bool succeeded(nvrtcResult s) {
  return s == NVRTC_SUCCESS;
}

template <typename Status>
[[noreturn]] void throw_failure(const char* file, int line, const char* call, Status status) {
  throw CudaError(format_failure(file, line, call, status_text(status)));
}

}  // namespace cuvil::runtime::cuda

// Any of the status types above; the status decides which text describes it.
#define CUVIL_CUDA_CHECK(call)                                                              \
  do {                                                                                      \
    const auto cuvil_cuda_status_ = (call);                                                 \
    if (!::cuvil::runtime::cuda::succeeded(cuvil_cuda_status_)) {                           \
      ::cuvil::runtime::cuda::throw_failure(__FILE__, __LINE__, #call, cuvil_cuda_status_); \
    }                                                                                       \
  } while (0)
