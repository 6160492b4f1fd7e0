// Per-op regions: an Executor StepObserver that times every step of every run with the region
// clock (probes/clock.h), and optionally takes counter deltas over each step, then turns them
// into run.json's per-op records (json_report.h OpRecord). It lives in bench_suite, not probes,
// because it knows the runtime's Plan (probes/ sits below runtime/ and stays free of it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_suite/json_report.h"
#include "runtime/plan.h"
#include "runtime/step_observer.h"

namespace cuvil::bench {

// One counter's cumulative reading.
struct CounterSnapshot {
  uint64_t raw = 0;
  uint64_t time_enabled_ns = 0;
  uint64_t time_running_ns = 0;
};
// Fills `out` with every counter's cumulative reading, always in the same order.
using CounterSnapshotFn = std::function<void(std::vector<CounterSnapshot>& out)>;

class OpProfiler final : public runtime::StepObserver {
 public:
  // `read_counters` (optional): read at every step's begin and end; the deltas are kept per step.
  explicit OpProfiler(size_t step_count, CounterSnapshotFn read_counters = {});

  // Room for this many runs, so that recording does not allocate inside them.
  void reserve(int64_t iterations);

  void on_run_begin() override;
  void on_step_begin(size_t step_index) override;
  void on_step_end(size_t step_index) override;
  void on_run_end() override;

  // Runs observed from begin to end (a run that threw half-way is not counted).
  int64_t iterations() const { return iterations_; }
  size_t step_count() const { return step_ns_.size(); }
  // ns of step `step` in each counted run.
  const std::vector<double>& step_ns(size_t step) const { return step_ns_[step]; }
  // Counter `counter`'s deltas over step `step`, summed over the counted runs.
  const CounterSnapshot& counter_delta(size_t step, size_t counter) const {
    return counter_totals_[step][counter];
  }
  size_t counter_count() const { return counter_count_; }

 private:
  CounterSnapshotFn read_counters_;
  size_t counter_count_ = 0;
  int64_t iterations_ = 0;
  size_t next_step_ = 0;
  int64_t step_begin_ns_ = 0;
  std::vector<double> run_ns_;  // this run's step times, kept once the run ends
  std::vector<std::vector<double>> step_ns_;
  std::vector<CounterSnapshot> begin_, end_;
  std::vector<std::vector<CounterSnapshot>> run_counters_;  // this run's deltas
  std::vector<std::vector<CounterSnapshot>> counter_totals_;
};

// What a counter is called and whether it can count (its reason when not).
struct CounterDescription {
  std::string name;
  bool supported = false;
  std::string reason;
};

// One record per step of `plan`, in step order, from the profiler's counted runs. `counters`
// describes the profiler's counters, in its reader's order.
OpsProfile ops_profile(const runtime::Plan& plan, const OpProfiler& profiler,
                       const std::vector<CounterDescription>& counters = {});

// The counter's value over a region: raw delta scaled by enabled/running (multiplexing), divided
// by `iterations`.
CounterValue counter_value(const CounterDescription& description, const CounterSnapshot& delta,
                           int64_t iterations);

// The top `limit` ops by time as a table, then the check line "ops sum X ms vs measured Y ms".
std::string format_ops_table(const RungResult& r, size_t limit);

}  // namespace cuvil::bench
