// Time a piece of stream work with CUDA events (GPU time, not host time): warm-up runs first,
// then `reps` runs between two events. For device-peak probes and the GEMM comparison tool.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace cuvil::runtime::cuda {

// Milliseconds per run of `work` (which enqueues on `stream`), averaged over `reps` runs after
// `warmups` unmeasured ones.
double event_ms_per_run(cudaStream_t stream, int warmups, int reps,
                        const std::function<void()>& work);

}  // namespace cuvil::runtime::cuda
