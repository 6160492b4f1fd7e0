#include "probes/cupti/cupti_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "base/error.h"

#ifndef CUVIL_CUPTI_LIBRARY_PATH
#define CUVIL_CUPTI_LIBRARY_PATH "libcupti.so"
#endif

namespace cuvil::probes::cupti {

namespace {

struct Loaded {
  CuptiLibrary library;
  CuptiAvailability availability;
};

std::string dl_error() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown dlopen error";
}

std::vector<std::string> cupti_candidates() {
  std::vector<std::string> paths = {CUVIL_CUPTI_LIBRARY_PATH, "libcupti.so"};
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* home = std::getenv(variable)) {
      paths.push_back(std::string(home) + "/lib/libcupti.so");
      paths.push_back(std::string(home) + "/lib64/libcupti.so");
      paths.push_back(std::string(home) + "/extras/CUPTI/lib64/libcupti.so");
    }
  }
  paths.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  return paths;
}

Loaded load() {
  Loaded loaded;
  std::string driver_error;
  int init_status = -1;
  int device_count = 0;
  // The driver first: CUPTI is useless without it, and cuInit says whether there is a GPU.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    driver_error = dl_error();
  } else {
    using InitFn = int (*)(unsigned);
    using CountFn = int (*)(int*);
    const auto cu_init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
    const auto cu_count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
    init_status = cu_init != nullptr ? cu_init(0) : -1;
    if (init_status == 0 && cu_count != nullptr && cu_count(&device_count) != 0) device_count = 0;
    loaded.library.cuCtxGetCurrent =
        reinterpret_cast<CUresult (*)(CUcontext*)>(dlsym(driver, "cuCtxGetCurrent"));
  }
  std::string cupti_error;
  void* library = nullptr;
  for (const std::string& path : cupti_candidates()) {
    library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      loaded.availability.library_path = path;
      break;
    }
    if (cupti_error.empty()) cupti_error = dl_error();
  }
  if (library != nullptr) {
    cupti_error.clear();
#define CUVIL_CUPTI_LOAD(name)                                                           \
  loaded.library.name = reinterpret_cast<decltype(&::name)>(dlsym(library, #name));      \
  if (loaded.library.name == nullptr && cupti_error.empty()) {                           \
    cupti_error = loaded.availability.library_path +                                     \
                  " has no " #name                                                       \
                  " (a CUPTI older than the headers this was built with, API version " + \
                  std::to_string(CUPTI_API_VERSION) + ")";                               \
  }
    CUVIL_CUPTI_FUNCTIONS(CUVIL_CUPTI_LOAD)
#undef CUVIL_CUPTI_LOAD
  }
  loaded.availability.device_count = device_count;
  loaded.availability.reason =
      unavailable_reason_from(driver_error, init_status, device_count, cupti_error);
  loaded.availability.available = loaded.availability.reason.empty();
  return loaded;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

CuptiAvailability cupti_availability() {
  return loaded().availability;
}

std::string unavailable_reason_from(const std::string& driver_dlerror, int cu_init_status,
                                    int device_count, const std::string& cupti_dlerror) {
  if (!driver_dlerror.empty()) {
    return "no NVIDIA driver: libcuda.so.1 could not be loaded (" + driver_dlerror +
           "), so there is no GPU to trace on this machine";
  }
  switch (cu_init_status) {
    case 0:
      break;
    case 100:  // CUDA_ERROR_NO_DEVICE
      return "the NVIDIA driver is installed but finds no CUDA device (cuInit: "
             "CUDA_ERROR_NO_DEVICE; check CUDA_VISIBLE_DEVICES)";
    case 35:  // CUDA_ERROR_INSUFFICIENT_DRIVER
      return "the NVIDIA driver is older than this CUDA toolkit (cuInit: "
             "CUDA_ERROR_INSUFFICIENT_DRIVER); update the driver";
    case 3:  // CUDA_ERROR_NOT_INITIALIZED
    case 999:
    default:
      return "the NVIDIA driver failed to initialise (cuInit returned " +
             std::to_string(cu_init_status) + "); see `nvidia-smi`";
  }
  if (device_count <= 0) return "no CUDA device (cuDeviceGetCount: 0)";
  if (!cupti_dlerror.empty()) {
    return "CUPTI is not usable: " + cupti_dlerror +
           " (install CUDA's CUPTI, or point CUDA_HOME or LD_LIBRARY_PATH at it)";
  }
  return "";
}

std::string explain_cupti_result(CUptiResult result, const std::string& call) {
  const std::string prefix = call + " failed: ";
  switch (result) {
    case CUPTI_SUCCESS:
      return "";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return prefix +
             "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: the driver restricts GPU performance counters "
             "to administrators; run as root, or load the driver with "
             "NVreg_RestrictProfilingToAdminUsers=0 (see "
             "https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return prefix +
             "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: another profiler (Nsight Systems, "
             "Nsight Compute, DCGM profiling, or another CUPTI client in this process) already "
             "holds CUPTI; run without it";
    case CUPTI_ERROR_HARDWARE_BUSY:
      return prefix +
             "CUPTI_ERROR_HARDWARE_BUSY: the GPU's performance counters are held by another "
             "profiler (Nsight Compute, DCGM's profiling module: `dcgmi profile --pause`); stop "
             "it and retry";
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return prefix +
             "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED: the legacy event/metric API is already in "
             "use in this process and excludes the Profiling API";
    case CUPTI_ERROR_NOT_INITIALIZED:
      return prefix +
             "CUPTI_ERROR_NOT_INITIALIZED: CUPTI could not initialise the CUDA driver (no GPU, or "
             "a driver older than CUPTI)";
    case CUPTI_ERROR_NOT_COMPATIBLE:
      return prefix +
             "CUPTI_ERROR_NOT_COMPATIBLE: this CUPTI does not match the driver; use the CUPTI of "
             "the CUDA toolkit the driver supports";
    case CUPTI_ERROR_NOT_SUPPORTED:
      return prefix + "CUPTI_ERROR_NOT_SUPPORTED: this device or driver does not support it";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
      return prefix + "a virtualised GPU (vGPU) without profiling support";
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
      return prefix + "profiling is not supported on a MIG slice of this GPU";
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
      return prefix + "profiling is not supported on CMP devices";
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return prefix + "profiling is not supported on this WSL device";
    case CUPTI_ERROR_INVALID_METRIC_NAME:
      return prefix + "CUPTI_ERROR_INVALID_METRIC_NAME: a metric this GPU does not have";
    case CUPTI_ERROR_INVALID_CONTEXT:
      return prefix + "CUPTI_ERROR_INVALID_CONTEXT: no current CUDA context on this thread";
    case CUPTI_ERROR_OUT_OF_MEMORY:
      return prefix + "CUPTI_ERROR_OUT_OF_MEMORY";
    default:
      return prefix + "CUPTI error " + std::to_string(static_cast<int>(result));
  }
}

const CuptiLibrary& CuptiLibrary::get() {
  const Loaded& instance = loaded();
  if (!instance.availability.available) {
    throw UserError("CUPTI is unavailable: " + instance.availability.reason);
  }
  return instance.library;
}

void CuptiLibrary::check(CUptiResult result, const char* call) const {
  if (result == CUPTI_SUCCESS) return;
  std::string text = explain_cupti_result(result, call);
  const char* name = nullptr;
  if (cuptiGetResultString != nullptr && cuptiGetResultString(result, &name) == CUPTI_SUCCESS &&
      name != nullptr && text.find(name) == std::string::npos) {
    text += " (" + std::string(name) + ")";
  }
  throw UserError(text);
}

}  // namespace cuvil::probes::cupti
