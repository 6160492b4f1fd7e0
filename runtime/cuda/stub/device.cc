// A build without the CUDA toolkit: the backend exists only to say why it cannot run.
#include "runtime/cuda/device.h"
#include "base/error.h"

namespace cuvil::runtime::cuda {

std::string cuda_unavailable_reason() {
  return "this build has no CUDA toolkit (reconfigure with the toolkit at /usr/local/cuda)";
}

void require_cuda(const std::string& what) {
  throw UserError(what + ": " + cuda_unavailable_reason());
}

DeviceInfo device_info(int) {
  require_cuda("device query");
  return {};
}

std::string describe(const DeviceInfo& info) {
  return info.name;
}

}  // namespace cuvil::runtime::cuda
