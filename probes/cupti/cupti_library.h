// libcupti and the CUDA driver, loaded with dlopen on first use: cuvil-bench links neither, so it
// starts on machines without a driver or GPU and says why CUPTI is unavailable. Compiled only
// with the CUDA toolkit (its headers declare the functions loaded here).
#pragma once

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <string>

namespace cuvil::probes::cupti {

// Whether CUPTI can trace here, and if not, the one reason that stops it.
struct CuptiAvailability {
  bool available = false;
  std::string reason;        // empty when available
  std::string library_path;  // the libcupti that was loaded, when it was
  int device_count = 0;
};
CuptiAvailability cupti_availability();

// The reason in words, from what was observed (testable without a driver): `driver_dlerror`
// non-empty when libcuda.so.1 did not load, `cu_init_status` cuInit's CUresult, `device_count`
// cuDeviceGetCount's answer, `cupti_dlerror` non-empty when libcupti did not load.
std::string unavailable_reason_from(const std::string& driver_dlerror, int cu_init_status,
                                    int device_count, const std::string& cupti_dlerror);

// What a failed CUPTI call means and what to do about it: privileges
// (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), another profiler holding CUPTI or the counters
// (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, CUPTI_ERROR_HARDWARE_BUSY,
// CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED), unsupported devices (virtual, MIG, CMP, WSL).
std::string explain_cupti_result(CUptiResult result, const std::string& call);

// The loaded entry points. get() throws UserError with cupti_availability()'s reason.
struct CuptiLibrary {
#define CUVIL_CUPTI_FUNCTIONS(X)                  \
  X(cuptiGetResultString)                         \
  X(cuptiGetTimestamp)                            \
  X(cuptiActivityEnable)                          \
  X(cuptiActivityDisable)                         \
  X(cuptiActivityRegisterCallbacks)               \
  X(cuptiActivityFlushAll)                        \
  X(cuptiActivityGetNextRecord)                   \
  X(cuptiActivityGetNumDroppedRecords)            \
  X(cuptiActivityPushExternalCorrelationId)       \
  X(cuptiActivityPopExternalCorrelationId)        \
  X(cuptiProfilerInitialize)                      \
  X(cuptiProfilerDeInitialize)                    \
  X(cuptiProfilerGetCounterAvailability)          \
  X(cuptiDeviceGetChipName)                       \
  X(cuptiProfilerHostInitialize)                  \
  X(cuptiProfilerHostDeinitialize)                \
  X(cuptiProfilerHostConfigAddMetrics)            \
  X(cuptiProfilerHostGetConfigImageSize)          \
  X(cuptiProfilerHostGetConfigImage)              \
  X(cuptiProfilerHostGetNumOfPasses)              \
  X(cuptiProfilerHostEvaluateToGpuValues)         \
  X(cuptiRangeProfilerEnable)                     \
  X(cuptiRangeProfilerDisable)                    \
  X(cuptiRangeProfilerSetConfig)                  \
  X(cuptiRangeProfilerStart)                      \
  X(cuptiRangeProfilerStop)                       \
  X(cuptiRangeProfilerPushRange)                  \
  X(cuptiRangeProfilerPopRange)                   \
  X(cuptiRangeProfilerDecodeData)                 \
  X(cuptiRangeProfilerGetCounterDataSize)         \
  X(cuptiRangeProfilerCounterDataImageInitialize) \
  X(cuptiRangeProfilerGetCounterDataInfo)         \
  X(cuptiRangeProfilerCounterDataGetRangeInfo)
#define CUVIL_CUPTI_POINTER(name) decltype(&::name) name = nullptr;
  CUVIL_CUPTI_FUNCTIONS(CUVIL_CUPTI_POINTER)
#undef CUVIL_CUPTI_POINTER
  // From the driver: the context the range profiler attaches to.
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;

  static const CuptiLibrary& get();
  // Throws UserError("<call> failed: <explanation>") unless `result` is CUPTI_SUCCESS.
  void check(CUptiResult result, const char* call) const;
};

}  // namespace cuvil::probes::cupti
