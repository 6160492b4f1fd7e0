// The CUDA device as the runtime sees it: whether one is usable (and if not, exactly why), and
// what it is. Plain host declarations: callers need no CUDA headers, and on a machine without a
// driver or device every function here answers instead of failing to load.
#pragma once

#include <cstdint>
#include <string>

namespace cuvil::runtime::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;  // compute capability
  int multiprocessors = 0;
  int64_t total_memory_bytes = 0;
  int64_t shared_memory_per_block_optin = 0;  // largest dynamic shared memory a kernel may ask
  int clock_khz = 0;                          // peak SM clock
  int memory_clock_khz = 0;                   // peak memory clock
  int memory_bus_bits = 0;
  int driver_version = 0, runtime_version = 0;              // e.g. 13000
  int sm_arch() const { return sm_major * 10 + sm_minor; }  // 90 for an H100/H200
};

// Empty when a CUDA device is usable; otherwise one line saying why not, e.g.
// "no CUDA driver (libcuda.so.1 not found)", "no CUDA device", "this build has no CUDA toolkit".
std::string cuda_unavailable_reason();
// Throws UserError("<what>: <reason>") unless a device is usable.
void require_cuda(const std::string& what);

// Device `index` (0: the first visible one). Requires a usable device.
DeviceInfo device_info(int index = 0);
// "NVIDIA H200 (sm_90, 132 SMs, 140.4 GiB, 1980 MHz, driver 13.0)".
std::string describe(const DeviceInfo& info);

// Reasons in the words cuda_unavailable_reason() uses, from what was observed (testable without
// a device): `driver_dlerror` non-empty when libcuda.so.1 failed to load, `status` the CUDA
// runtime's answer to "how many devices" with `device_count`.
std::string unavailable_reason_from(const std::string& driver_dlerror, int status,
                                    const std::string& status_text, int device_count);

}  // namespace cuvil::runtime::cuda
