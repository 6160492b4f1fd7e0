#include "probes/cupti/gpu_activity.h"

#include <algorithm>

namespace cuvil::probes::cupti {

uint64_t union_length(std::vector<std::pair<uint64_t, uint64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  uint64_t total = 0;
  uint64_t covered_to = 0;
  bool any = false;
  for (const auto& [start, end] : intervals) {
    if (end <= start) continue;
    if (!any || start >= covered_to) {
      total += end - start;
      covered_to = end;
      any = true;
    } else if (end > covered_to) {
      total += end - covered_to;
      covered_to = end;
    }
  }
  return total;
}

std::string memcpy_name(uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "memcpy array";
    default:
      return "memcpy";
  }
}

size_t ActivityLog::add_buffer(uint8_t* buffer, size_t valid_size, NextRecordFn next) {
  size_t count = 0;
  CUpti_Activity* record = nullptr;
  while (next(buffer, valid_size, &record) == CUPTI_SUCCESS && record != nullptr) {
    add_record(record);
    ++count;
  }
  return count;
}

void ActivityLog::add_record(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      GpuActivity activity;
      activity.kind = GpuActivityKind::kernel;
      activity.name = kernel->name != nullptr ? kernel->name : "(unnamed kernel)";
      activity.start_ns = kernel->start;
      activity.end_ns = kernel->end;
      activity.correlation_id = kernel->correlationId;
      activity.device_id = kernel->deviceId;
      activity.stream_id = kernel->streamId;
      activities_.push_back(std::move(activity));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      GpuActivity activity;
      activity.kind = GpuActivityKind::memcpy;
      activity.name = memcpy_name(copy->copyKind);
      activity.start_ns = copy->start;
      activity.end_ns = copy->end;
      activity.correlation_id = copy->correlationId;
      activity.device_id = copy->deviceId;
      activity.stream_id = copy->streamId;
      activity.bytes = copy->bytes;
      activities_.push_back(std::move(activity));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* set = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      GpuActivity activity;
      activity.kind = GpuActivityKind::memset;
      activity.name = "memset";
      activity.start_ns = set->start;
      activity.end_ns = set->end;
      activity.correlation_id = set->correlationId;
      activity.device_id = set->deviceId;
      activity.stream_id = set->streamId;
      activity.bytes = set->bytes;
      activities_.push_back(std::move(activity));
      return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* link = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      // Only our own kind: other tools (NVTX, OpenACC) may push theirs into the same stream.
      if (link->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
        op_of_correlation_[link->correlationId] = static_cast<int64_t>(link->externalId);
      } else {
        ++ignored_;
      }
      return;
    }
    default:
      ++ignored_;
      return;
  }
}

std::vector<GpuActivity> ActivityLog::activities() const {
  std::vector<GpuActivity> joined = activities_;
  for (GpuActivity& activity : joined) {
    const auto found = op_of_correlation_.find(activity.correlation_id);
    activity.op = found == op_of_correlation_.end() ? -1 : found->second;
  }
  std::stable_sort(joined.begin(), joined.end(), [](const GpuActivity& a, const GpuActivity& b) {
    return a.start_ns < b.start_ns;
  });
  return joined;
}

std::vector<OpGpuSummary> ActivityLog::per_op() const {
  std::map<int64_t, OpGpuSummary> by_op;
  std::map<int64_t, std::vector<std::pair<uint64_t, uint64_t>>> intervals;
  for (const GpuActivity& activity : activities()) {
    OpGpuSummary& summary = by_op[activity.op];
    if (summary.kernels + summary.copies + summary.sets == 0) {
      summary.op = activity.op;
      summary.first_start_ns = activity.start_ns;
    }
    summary.first_start_ns = std::min(summary.first_start_ns, activity.start_ns);
    summary.last_end_ns = std::max(summary.last_end_ns, activity.end_ns);
    switch (activity.kind) {
      case GpuActivityKind::kernel:
        ++summary.kernels;
        summary.kernel_ns += activity.duration_ns();
        break;
      case GpuActivityKind::memcpy:
        ++summary.copies;
        summary.copy_bytes += activity.bytes;
        break;
      case GpuActivityKind::memset:
        ++summary.sets;
        break;
    }
    intervals[activity.op].emplace_back(activity.start_ns, activity.end_ns);
  }
  std::vector<OpGpuSummary> summaries;
  for (auto& [op, summary] : by_op) {
    summary.busy_ns = union_length(intervals[op]);
    if (op >= 0) summaries.push_back(summary);
  }
  const auto outside = by_op.find(-1);
  if (outside != by_op.end()) summaries.push_back(outside->second);
  return summaries;
}

uint64_t ActivityLog::busy_ns() const {
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  for (const GpuActivity& activity : activities_) {
    intervals.emplace_back(activity.start_ns, activity.end_ns);
  }
  return union_length(std::move(intervals));
}

void ActivityLog::clear() {
  activities_.clear();
  op_of_correlation_.clear();
  ignored_ = 0;
  dropped_ = 0;
}

size_t packed_record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    default:
      return 0;
  }
}

CUptiResult next_packed_record(uint8_t* buffer, size_t valid_size, CUpti_Activity** record) {
  size_t offset = 0;
  if (*record != nullptr) {
    const auto* current = reinterpret_cast<const uint8_t*>(*record);
    const size_t size = packed_record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(current - buffer) + ((size + 7) & ~size_t{7});
  }
  if (offset + sizeof(CUpti_Activity) > valid_size) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  const size_t size = packed_record_size(next->kind);
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (offset + size > valid_size) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return CUPTI_SUCCESS;
}

}  // namespace cuvil::probes::cupti
