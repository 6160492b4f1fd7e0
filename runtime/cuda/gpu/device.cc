// Device query through the CUDA runtime. The driver is loaded by cudart at run time; probing it
// with dlopen first turns "CUDA driver version is insufficient" into the real reason.
#include <dlfcn.h>

#include <cstdio>
#include <mutex>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"

namespace cuvil::runtime::cuda {

namespace {

std::string probe_reason() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* err = dlerror();
    return unavailable_reason_from(err ? err : "dlopen failed", 0, "", 0);
  }
  // Keep the handle: cudart uses the same library.
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  return unavailable_reason_from("", static_cast<int>(status),
                                 status == cudaSuccess ? "" : status_text(status), count);
}

}  // namespace

std::string cuda_unavailable_reason() {
  static std::once_flag once;
  static std::string reason;
  std::call_once(once, [] { reason = probe_reason(); });
  return reason;
}

void require_cuda(const std::string& what) {
  const std::string reason = cuda_unavailable_reason();
  if (!reason.empty()) throw UserError(what + ": " + reason);
}

DeviceInfo device_info(int index) {
  require_cuda("device query");
  DeviceInfo info;
  info.index = index;
  cudaDeviceProp prop{};
  CUVIL_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  info.name = prop.name;
  info.sm_major = prop.major;
  info.sm_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  info.shared_memory_per_block_optin = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  CUVIL_CUDA_CHECK(cudaDeviceGetAttribute(&info.clock_khz, cudaDevAttrClockRate, index));
  CUVIL_CUDA_CHECK(
      cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, index));
  CUVIL_CUDA_CHECK(
      cudaDeviceGetAttribute(&info.memory_bus_bits, cudaDevAttrGlobalMemoryBusWidth, index));
  CUVIL_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  CUVIL_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  return info;
}

std::string describe(const DeviceInfo& info) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d, %d SMs, %.1f GiB, %d MHz, driver %d.%d)",
                info.name.c_str(), info.sm_arch(), info.multiprocessors,
                static_cast<double>(info.total_memory_bytes) / (1 << 30), info.clock_khz / 1000,
                info.driver_version / 1000, (info.driver_version % 1000) / 10);
  return buf;
}

}  // namespace cuvil::runtime::cuda
