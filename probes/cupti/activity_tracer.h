// CUPTI Activity tracing: kernel, memcpy and memset records with nanosecond start/end, each tied
// to the op region (probes/cupti/op_regions.h) that launched it. One tracer per process at a
// time (CUPTI's activity buffers are process-wide).
#pragma once

#include <memory>

#include "probes/cupti/gpu_activity.h"

namespace cuvil::probes::cupti {

class GpuActivityTracer {
 public:
  // UserError with the reason when CUPTI cannot trace here (no driver, no device, no libcupti,
  // insufficient privileges, another profiler holding CUPTI, a tracer already running).
  static GpuActivityTracer start();
  GpuActivityTracer(GpuActivityTracer&&) noexcept;
  GpuActivityTracer& operator=(GpuActivityTracer&&) noexcept;
  ~GpuActivityTracer();  // stops if still running

  // Delivers every buffered record (cuptiActivityFlushAll); call after synchronising the device.
  void flush();
  // Flushes, disables the activity kinds and ends op-region marking.
  void stop();
  // The records so far (joined to their ops).
  ActivityLog log() const;

 private:
  struct State;
  explicit GpuActivityTracer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cuvil::probes::cupti
