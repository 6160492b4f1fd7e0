// Bookkeeping of CUPTI Activity records: kernel, memcpy and memset records with nanosecond
// start/end, joined to the op region that launched them through CUPTI's external correlation
// records (correlationId -> the step index pushed around the op). Pure host code over record
// memory: tested on synthetic records without a GPU. Compiled only with the CUDA toolkit.
#pragma once

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cuvil::probes::cupti {

enum class GpuActivityKind { kernel, memcpy, memset };

struct GpuActivity {
  GpuActivityKind kind = GpuActivityKind::kernel;
  std::string name;  // the kernel's (mangled) name, or "memcpy HtoD", "memset"
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t device_id = 0, stream_id = 0;
  uint64_t bytes = 0;  // copies and sets
  int64_t op = -1;     // the op region (step index) that launched it; -1: launched outside any
  uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

// What one op's GPU work amounted to.
struct OpGpuSummary {
  int64_t op = -1;
  size_t kernels = 0, copies = 0, sets = 0;
  uint64_t kernel_ns = 0;  // kernel durations summed (concurrent kernels each count)
  uint64_t busy_ns = 0;    // the union of all its records' intervals (overlaps counted once)
  uint64_t copy_bytes = 0;
  uint64_t first_start_ns = 0, last_end_ns = 0;
};

// The union length of half-open intervals [start, end), overlapping or not, in any order.
uint64_t union_length(std::vector<std::pair<uint64_t, uint64_t>> intervals);

// cuptiActivityGetNextRecord's contract: *record == nullptr asks for the first record, else the
// one after *record; anything but CUPTI_SUCCESS ends the walk.
using NextRecordFn = CUptiResult (*)(uint8_t* buffer, size_t valid_size, CUpti_Activity** record);

class ActivityLog {
 public:
  // Walks one completed buffer; returns the records consumed.
  size_t add_buffer(uint8_t* buffer, size_t valid_size, NextRecordFn next);
  // One record of any kind; kinds this log does not keep are counted and ignored.
  void add_record(const CUpti_Activity* record);
  void add_dropped(uint64_t count) { dropped_ += count; }

  // Records joined with their correlations (whichever arrived first), in start order.
  std::vector<GpuActivity> activities() const;
  // One summary per op that launched work, ascending; work outside any op last (op -1).
  std::vector<OpGpuSummary> per_op() const;
  uint64_t busy_ns() const;  // the union over every record: the GPU's busy time

  size_t record_count() const { return activities_.size(); }
  size_t ignored_records() const { return ignored_; }
  uint64_t dropped() const { return dropped_; }
  void clear();

 private:
  std::vector<GpuActivity> activities_;
  std::map<uint32_t, int64_t> op_of_correlation_;
  size_t ignored_ = 0;
  uint64_t dropped_ = 0;
};

// "memcpy HtoD" ... from CUPTI's copy kind.
std::string memcpy_name(uint8_t copy_kind);

// Walks a buffer of records laid back to back at their structs' sizes, 8-byte aligned (the
// layout of synthetic test buffers; CUPTI's own buffers go through cuptiActivityGetNextRecord).
CUptiResult next_packed_record(uint8_t* buffer, size_t valid_size, CUpti_Activity** record);
// The struct size of the record kinds this log reads (0 for other kinds).
size_t packed_record_size(CUpti_ActivityKind kind);

}  // namespace cuvil::probes::cupti
