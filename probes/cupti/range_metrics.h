// GPU metrics per range through CUPTI's Range Profiler (cupti_range_profiler.h, the Profiling API
// of CUDA 13) with user ranges and user replay: e.g. dram__bytes_read.sum,
// sm__throughput.avg.pct_of_peak_sustained_elapsed, gpu__time_duration.sum for every op region.
// Metrics that need more counters than one pass collects need the same work run again, once per
// pass: loop { begin_pass(); run the ops with push_range/pop_range; } while (!end_pass()).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace cuvil::probes::cupti {

struct RangeMetricValues {
  std::string range;           // the name given to push_range (nested ranges joined by '/')
  std::vector<double> values;  // one per metric, in the order given to start()
};

// dram__bytes_read.sum, sm__throughput.avg.pct_of_peak_sustained_elapsed, gpu__time_duration.sum.
std::vector<std::string> default_gpu_metrics();
// UserError unless `name` has the form of a Perfworks metric (unit__counter[.rollup[.submetric]]),
// so a typo fails before any GPU work.
void check_metric_name(const std::string& name);

class GpuRangeMetrics {
 public:
  // On the calling thread's current CUDA context (device `device_index`). UserError with the
  // reason when CUPTI cannot profile here (see cupti_availability, explain_cupti_result).
  static GpuRangeMetrics start(const std::vector<std::string>& metrics, size_t max_ranges = 4096,
                               int device_index = 0);
  GpuRangeMetrics(GpuRangeMetrics&&) noexcept;
  GpuRangeMetrics& operator=(GpuRangeMetrics&&) noexcept;
  ~GpuRangeMetrics();

  size_t pass_count() const;  // passes the metrics need
  void begin_pass();
  void push_range(const std::string& name);
  void pop_range();
  // Ends the pass; true when every pass has been submitted.
  bool end_pass();
  // Decodes the counter data: one entry per range, in the order the ranges were profiled.
  std::vector<RangeMetricValues> results();
  const std::vector<std::string>& metrics() const;

 private:
  struct State;
  explicit GpuRangeMetrics(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cuvil::probes::cupti
