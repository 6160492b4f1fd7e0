#include "runtime/cuda/gpu/event_timer.h"

#include "runtime/cuda/cuda_check.h"

namespace cuvil::runtime::cuda {

double event_ms_per_run(cudaStream_t stream, int warmups, int reps,
                        const std::function<void()>& work) {
  cudaEvent_t a = nullptr, b = nullptr;
  CUVIL_CUDA_CHECK(cudaEventCreate(&a));
  CUVIL_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warmups; ++i) work();
  CUVIL_CUDA_CHECK(cudaEventRecord(a, stream));
  for (int i = 0; i < reps; ++i) work();
  CUVIL_CUDA_CHECK(cudaEventRecord(b, stream));
  CUVIL_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CUVIL_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return static_cast<double>(ms) / reps;
}

}  // namespace cuvil::runtime::cuda
