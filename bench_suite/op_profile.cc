#include "bench_suite/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "base/error.h"
#include "probes/clock.h"
#include "runtime/kernel_table.h"
#include "stats/summary.h"

namespace cuvil::bench {

namespace {

CounterSnapshot operator-(const CounterSnapshot& a, const CounterSnapshot& b) {
  return {a.raw - b.raw, a.time_enabled_ns - b.time_enabled_ns,
          a.time_running_ns - b.time_running_ns};
}

void add_to(CounterSnapshot& total, const CounterSnapshot& d) {
  total.raw += d.raw;
  total.time_enabled_ns += d.time_enabled_ns;
  total.time_running_ns += d.time_running_ns;
}

}  // namespace

OpProfiler::OpProfiler(size_t step_count, CounterSnapshotFn read_counters)
    : read_counters_(std::move(read_counters)),
      run_ns_(step_count, 0.0),
      step_ns_(step_count),
      run_counters_(step_count),
      counter_totals_(step_count) {
  probes::tsc_calibration();  // calibrate now, not inside the first region
  if (read_counters_) {
    read_counters_(begin_);
    counter_count_ = begin_.size();
    for (auto& v : run_counters_) v.assign(counter_count_, {});
    for (auto& v : counter_totals_) v.assign(counter_count_, {});
  }
}

void OpProfiler::reserve(int64_t iterations) {
  for (auto& ns : step_ns_) ns.reserve(static_cast<size_t>(std::max<int64_t>(iterations, 0)));
}

void OpProfiler::on_run_begin() {
  next_step_ = 0;
  for (auto& v : run_counters_) std::fill(v.begin(), v.end(), CounterSnapshot{});
}

// Counters are read outside the timed region (before its start, after its end) so that their
// reading cost (a few syscalls) does not land in the step's time.
void OpProfiler::on_step_begin(size_t step_index) {
  CUVIL_CHECK(step_index == next_step_ && step_index < step_ns_.size(),
              "step " + std::to_string(step_index) + " began out of order");
  if (read_counters_) read_counters_(begin_);
  step_begin_ns_ = probes::region_now_ns();
}

void OpProfiler::on_step_end(size_t step_index) {
  const int64_t end_ns = probes::region_now_ns();
  CUVIL_CHECK(step_index == next_step_,
              "step " + std::to_string(step_index) + " ended out of order");
  run_ns_[step_index] = static_cast<double>(end_ns - step_begin_ns_);
  if (read_counters_) {
    read_counters_(end_);
    CUVIL_CHECK(end_.size() == counter_count_ && begin_.size() == counter_count_,
                "the counter reader changed its counter count");
    for (size_t c = 0; c < counter_count_; ++c) run_counters_[step_index][c] = end_[c] - begin_[c];
  }
  ++next_step_;
}

void OpProfiler::on_run_end() {
  if (next_step_ != step_ns_.size()) return;  // an incomplete run (should not happen) is dropped
  for (size_t i = 0; i < step_ns_.size(); ++i) {
    step_ns_[i].push_back(run_ns_[i]);
    for (size_t c = 0; c < counter_count_; ++c) add_to(counter_totals_[i][c], run_counters_[i][c]);
  }
  ++iterations_;
}

CounterValue counter_value(const CounterDescription& description, const CounterSnapshot& delta,
                           int64_t iterations) {
  CounterValue v;
  v.name = description.name;
  v.supported = description.supported;
  v.reason = description.reason;
  if (!v.supported || iterations <= 0) return v;
  const double n = static_cast<double>(iterations);
  v.raw = static_cast<double>(delta.raw) / n;
  v.time_enabled_ns = static_cast<double>(delta.time_enabled_ns) / n;
  v.time_running_ns = static_cast<double>(delta.time_running_ns) / n;
  v.scale = delta.time_running_ns > 0 ? static_cast<double>(delta.time_enabled_ns) /
                                            static_cast<double>(delta.time_running_ns)
                                      : 1.0;
  v.value = v.raw * v.scale;
  return v;
}

OpsProfile ops_profile(const runtime::Plan& plan, const OpProfiler& profiler,
                       const std::vector<CounterDescription>& counters) {
  CUVIL_CHECK(profiler.step_count() == plan.steps.size(), "profiler and plan differ in steps");
  CUVIL_CHECK(counters.size() == profiler.counter_count(),
              "counter descriptions do not match the profiler's counters");
  OpsProfile profile;
  profile.iterations = profiler.iterations();
  profile.clock = probes::region_clock_name();
  profile.records.reserve(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const runtime::Step& step = plan.steps[i];
    const std::vector<double>& ns = profiler.step_ns(i);
    OpRecord r;
    r.step = i;
    r.node = step.node_name;
    r.op = std::string(ir::to_string(step.op));
    r.kernel = step.kernel;
    r.lowering = runtime::lowering_of(step.kernel);
    r.input_shapes = step.input_shapes;
    r.output_shape = step.output_shape;
    r.flops = step.flops;
    r.bytes = step.bytes;
    if (!ns.empty()) {
      r.ns_per_iteration =
          std::accumulate(ns.begin(), ns.end(), 0.0) / static_cast<double>(ns.size());
      r.ns_min = *std::min_element(ns.begin(), ns.end());
      r.ns_median = stats::median_of(ns);
    }
    for (size_t c = 0; c < counters.size(); ++c) {
      r.counters.push_back(
          counter_value(counters[c], profiler.counter_delta(i, c), profiler.iterations()));
    }
    profile.records.push_back(std::move(r));
  }
  return profile;
}

std::string format_ops_table(const RungResult& r, size_t limit) {
  const OpsProfile& ops = r.probes.ops;
  const double total = ops.total_ns_per_iteration();
  std::vector<size_t> order(ops.records.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ops.records[a].ns_per_iteration > ops.records[b].ns_per_iteration;
  });
  std::string out;
  char buf[512];
  std::snprintf(
      buf, sizeof buf, "top ops of %s/%s by time (mean of %lld probe iteration(s), %s clock):\n",
      r.suite.c_str(), r.rung.c_str(), static_cast<long long>(ops.iterations), ops.clock.c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "  %5s %6s %9s %8s %6s %7s %-16s %-20s %-10s %s\n", "step",
                "share", "ms", "GFLOP/s", "%peak", "GB/s", "op", "kernel", "lowering", "node");
  out += buf;
  for (size_t k = 0; k < std::min(limit, order.size()); ++k) {
    const OpRecord& op = ops.records[order[k]];
    const Achieved a = achieved(r, op);
    std::snprintf(buf, sizeof buf, "  %5zu %5.1f%% %9.3f %8.1f %6s %7.2f %-16s %-20s %-10s %s\n",
                  op.step, total > 0 ? 100.0 * op.ns_per_iteration / total : 0.0,
                  op.ns_per_iteration * 1e-6, a.gflops, format_pct_peak(a).c_str(), a.gbps,
                  op.op.c_str(), op.kernel.c_str(), op.lowering.c_str(), op.node.c_str());
    out += buf;
  }
  if (order.size() > limit) {
    double rest = 0;
    for (size_t k = limit; k < order.size(); ++k) rest += ops.records[order[k]].ns_per_iteration;
    std::snprintf(buf, sizeof buf, "  (%zu more ops: %.1f%%, %.3f ms)\n", order.size() - limit,
                  total > 0 ? 100.0 * rest / total : 0.0, rest * 1e-6);
    out += buf;
  }
  const double measured = stats::summarize(r.measurement.real_ns).median;
  std::snprintf(buf, sizeof buf, "ops sum %.3f ms vs measured %.3f ms (%.1f%%)", total * 1e-6,
                measured * 1e-6, measured > 0 ? 100.0 * total / measured : 0.0);
  out += buf;
  if (!r.probes.probe_real_ns.empty()) {
    // The mean, like the records: the op sum is then a part of it (the regions are disjoint).
    const std::vector<double>& walls = r.probes.probe_real_ns;
    const double probed =
        std::accumulate(walls.begin(), walls.end(), 0.0) / static_cast<double>(walls.size());
    std::snprintf(buf, sizeof buf,
                  "; probe iterations took %.3f ms (mean, probes on: ops sum %.1f%% of it)",
                  probed * 1e-6, probed > 0 ? 100.0 * total / probed : 0.0);
    out += buf;
  }
  out += "\n";
  return out;
}

}  // namespace cuvil::bench
