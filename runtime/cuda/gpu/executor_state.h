// Internal to the GPU executor: the device-side state one CudaExecutor owns and the per-step
// launch builders (step_launches.cc). Each step becomes a list of Launch closures that only
// enqueue work on the stream they are given: no allocation, no host synchronisation, so the
// same closures run eagerly or inside a CUDA Graph capture.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/capture_plan.h"
#include "runtime/cuda/codegen/kernel_cache.h"
#include "runtime/cuda/codegen/launch.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/kernel_choice.h"
#include "runtime/cuda/kernels_simple.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cuda {

using Launch = std::function<void(cudaStream_t)>;

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(int64_t bytes, const char* what);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) {
    other.ptr_ = nullptr;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  char* get() const { return static_cast<char*>(ptr_); }
  int64_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

// The simple kernels (kernels_simple.h): one cubin, one handle per entry point.
class SimpleKernels {
 public:
  SimpleKernels(codegen::KernelCache& cache, int sm_arch);
  ~SimpleKernels();
  cudaKernel_t get(const char* name) const;

 private:
  cudaLibrary_t library_ = nullptr;
  std::map<std::string, cudaKernel_t> kernels_;
};

// A launch of simple kernel `name` with `params` copied into the closure.
template <typename Params>
Launch simple_launch(const SimpleKernels& kernels, const char* name, dim3 grid, dim3 block,
                     const Params& params) {
  const cudaKernel_t fn = kernels.get(name);
  return [fn, grid, block, params](cudaStream_t stream) {
    Params copy = params;
    void* args[] = {&copy};
    CUVIL_CUDA_CHECK(
        cudaLaunchKernel(reinterpret_cast<const void*>(fn), grid, block, args, 0, stream));
  };
}

struct CudnnConv {  // descriptors of one cuDNN convolution, owned
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace = 0;
  ~CudnnConv();
};

struct DeviceState {
  DeviceInfo info;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  codegen::KernelCache cache;
  std::unique_ptr<SimpleKernels> simple;
  std::map<std::string, std::unique_ptr<codegen::LoadedKernel>> generated;  // by kernel name
  std::vector<std::unique_ptr<CudnnConv>> convs;

  DeviceBuffer activations;  // arena + inputs (DeviceLayout)
  DeviceBuffer constants;
  DeviceBuffer scratch;
  DeviceBuffer cublas_workspace;  // cuBLAS and cuBLASLt (capture needs it preset)
  DeviceBuffer cudnn_workspace;   // the largest chosen cuDNN algorithm's need
  size_t cudnn_workspace_needed = 0;
  std::vector<char*> tensor_f32;  // f32 device pointer of each plan tensor (null: none)

  ~DeviceState();
  // Compiles (through the on-disk cache) and loads a generated kernel once per name.
  codegen::LoadedKernel* load(const codegen::KernelSource& source);
};

inline constexpr int64_t kCublasWorkspaceBytes = int64_t{32} << 20;
inline constexpr size_t kCudnnWorkspaceLimit = size_t{512} << 20;

// The launches of step `index` (main op, then any epilogue not fused into it). May rewrite
// `lowering` (a generated kernel that rejects the step falls back, with the reason).
std::vector<Launch> build_step_launches(DeviceState& s, const Plan& plan,
                                        const DeviceLayout& layout, size_t index,
                                        StepLowering& lowering);

// The device pointer step `step` reads for its input `input`: the arena/input tensor, or the
// constant in the type and form the step needs.
const void* input_pointer(const DeviceState& s, const Plan& plan, const DeviceLayout& layout,
                          const Step& step, const StepLowering& lowering, size_t input);

}  // namespace cuvil::runtime::cuda
