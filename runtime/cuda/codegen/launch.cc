#include "runtime/cuda/codegen/launch.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/cuda/cuda_check.h"

namespace cuvil::runtime::cuda::codegen {

LoadedKernel::LoadedKernel(const CompiledKernel& compiled) : name_(compiled.name) {
  CUVIL_CUDA_CHECK(cudaLibraryLoadData(&library_, compiled.cubin.data(), nullptr, nullptr, 0,
                                       nullptr, nullptr, 0));
  CUVIL_CUDA_CHECK(cudaLibraryGetKernel(&kernel_, library_, compiled.name.c_str()));
}

LoadedKernel::~LoadedKernel() {
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

void LoadedKernel::launch(const LaunchGeometry& geometry, const void* params, cudaStream_t stream) {
  if (geometry.shared_bytes > max_shared_set_) {
    int device = 0;
    CUVIL_CUDA_CHECK(cudaGetDevice(&device));
    CUVIL_CUDA_CHECK(
        cudaKernelSetAttributeForDevice(kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(geometry.shared_bytes), device));
    max_shared_set_ = geometry.shared_bytes;
  }
  void* args[] = {const_cast<void*>(params)};
  const dim3 grid(geometry.grid[0], geometry.grid[1], geometry.grid[2]);
  const dim3 block(geometry.block[0], geometry.block[1], geometry.block[2]);
  CUVIL_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), grid, block, args,
                                    geometry.shared_bytes, stream));
}

void launch(const CompiledKernel& compiled, const LaunchGeometry& geometry, void** args,
            cudaStream_t stream) {
  LoadedKernel kernel(compiled);
  kernel.launch(geometry, args[0], stream);
  // The library must outlive the launch: wait before ~LoadedKernel unloads it.
  CUVIL_CUDA_CHECK(cudaStreamSynchronize(stream));
}

LoadedKernel& loaded_kernel(KernelCache& cache, const KernelSource& source, int sm_arch) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<LoadedKernel>> loaded;
  const std::string key = cache.key(source, sm_arch);
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<LoadedKernel>& slot = loaded[key];
  if (!slot) slot = std::make_unique<LoadedKernel>(cache.get(source, sm_arch));
  return *slot;
}

}  // namespace cuvil::runtime::cuda::codegen
