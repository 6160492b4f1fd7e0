#include "probes/cupti/activity_tracer.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "base/error.h"
#include "probes/cupti/cupti_library.h"
#include "probes/cupti/op_regions.h"

namespace cuvil::probes::cupti {

namespace {

constexpr size_t kBufferBytes = 8u << 20;
constexpr CUpti_ActivityKind kTracedKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

// CUPTI's buffer callbacks are plain functions: they reach the running tracer's log through here.
std::mutex g_mutex;
ActivityLog* g_log = nullptr;
std::atomic<bool> g_active{false};

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                               size_t valid_size) {
  const CuptiLibrary& library = CuptiLibrary::get();
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_log != nullptr && buffer != nullptr) {
      g_log->add_buffer(buffer, valid_size, library.cuptiActivityGetNextRecord);
      size_t dropped = 0;
      if (library.cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) ==
          CUPTI_SUCCESS) {
        g_log->add_dropped(dropped);
      }
    }
  }
  std::free(buffer);
}

}  // namespace

void push_op_region(uint64_t step_index) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  CuptiLibrary::get().cuptiActivityPushExternalCorrelationId(
      CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, step_index);
}

void pop_op_region() {
  if (!g_active.load(std::memory_order_relaxed)) return;
  uint64_t last = 0;
  CuptiLibrary::get().cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                            &last);
}

bool op_regions_active() {
  return g_active.load(std::memory_order_relaxed);
}

struct GpuActivityTracer::State {
  ActivityLog log;
  bool running = false;
};

GpuActivityTracer::GpuActivityTracer(std::unique_ptr<State> state) : state_(std::move(state)) {}
GpuActivityTracer::GpuActivityTracer(GpuActivityTracer&&) noexcept = default;
GpuActivityTracer& GpuActivityTracer::operator=(GpuActivityTracer&&) noexcept = default;
GpuActivityTracer::~GpuActivityTracer() {
  if (state_ && state_->running) {
    try {
      stop();
    } catch (const UserError&) {
      // Destructors do not throw; the records are lost with the tracer anyway.
    }
  }
}

GpuActivityTracer GpuActivityTracer::start() {
  const CuptiLibrary& library = CuptiLibrary::get();
  if (g_active.exchange(true)) throw UserError("a GPU activity tracer is already running");
  auto state = std::make_unique<State>();
  try {
    static std::once_flag registered;
    CUptiResult registration = CUPTI_SUCCESS;
    std::call_once(registered, [&] {
      registration = library.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    });
    library.check(registration, "cuptiActivityRegisterCallbacks");
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_log = &state->log;
    }
    for (CUpti_ActivityKind kind : kTracedKinds) {
      library.check(library.cuptiActivityEnable(kind), "cuptiActivityEnable");
    }
  } catch (...) {
    for (CUpti_ActivityKind kind : kTracedKinds) library.cuptiActivityDisable(kind);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_log = nullptr;
    g_active = false;
    throw;
  }
  state->running = true;
  return GpuActivityTracer(std::move(state));
}

void GpuActivityTracer::flush() {
  const CuptiLibrary& library = CuptiLibrary::get();
  library.check(library.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
                "cuptiActivityFlushAll");
}

void GpuActivityTracer::stop() {
  if (!state_->running) return;
  const CuptiLibrary& library = CuptiLibrary::get();
  state_->running = false;
  g_active = false;
  const CUptiResult flushed = library.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind kind : kTracedKinds) library.cuptiActivityDisable(kind);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_log = nullptr;
  }
  library.check(flushed, "cuptiActivityFlushAll");
}

ActivityLog GpuActivityTracer::log() const {
  std::lock_guard<std::mutex> lock(g_mutex);
  return state_->log;
}

}  // namespace cuvil::probes::cupti
