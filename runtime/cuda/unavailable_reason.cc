#include "runtime/cuda/device.h"

namespace cuvil::runtime::cuda {

std::string unavailable_reason_from(const std::string& driver_dlerror, int status,
                                    const std::string& status_text, int device_count) {
  if (!driver_dlerror.empty()) {
    return "no CUDA driver (libcuda.so.1 not found: " + driver_dlerror + ")";
  }
  if (status != 0) {
    return "the CUDA driver is present but unusable (" + status_text + ")";
  }
  if (device_count <= 0) {
    return "no CUDA device (the driver sees none; check CUDA_VISIBLE_DEVICES)";
  }
  return "";
}

}  // namespace cuvil::runtime::cuda
