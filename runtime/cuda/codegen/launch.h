// Loading a compiled cubin and launching it (CUDA runtime library API: cudaLibraryLoadData /
// cudaLaunchKernel). Needs a GPU and driver at run time; links against cudart only, which loads
// the driver lazily, so programs that never launch still start on machines without one.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "runtime/cuda/codegen/gemm.h"
#include "runtime/cuda/codegen/kernel_cache.h"
#include "runtime/cuda/codegen/kernel_source.h"

namespace cuvil::runtime::cuda::codegen {

// A loaded kernel (owns its cudaLibrary_t). Sets the dynamic shared memory opt-in when needed.
class LoadedKernel {
 public:
  explicit LoadedKernel(const CompiledKernel& compiled);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  // `params` points at the kernel's one by-value params struct (GemmKernelParams, ...).
  void launch(const LaunchGeometry& geometry, const void* params, cudaStream_t stream);

 private:
  cudaLibrary_t library_ = nullptr;
  std::string name_;
  cudaKernel_t kernel_ = nullptr;
  unsigned max_shared_set_ = 48 * 1024;
};

// One-shot form: load (not cached) and launch; `args` is the cuLaunchKernel-style argument array.
void launch(const CompiledKernel& compiled, const LaunchGeometry& geometry, void** args,
            cudaStream_t stream);

// The loaded kernel for `source`: generated source -> `cache` (NVRTC or disk) -> loaded once per
// process and kept (thread-safe), so repeated calls only look up.
LoadedKernel& loaded_kernel(KernelCache& cache, const KernelSource& source, int sm_arch);

}  // namespace cuvil::runtime::cuda::codegen
