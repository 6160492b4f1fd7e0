#include "bench_suite/probe_run.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>

#include "base/error.h"
#include "bench_suite/op_profile.h"
#include "probes/clock.h"
#include "probes/perf_counters.h"
#include "probes/stack_sampler.h"
#include "stats/summary.h"

namespace cuvil::bench {

namespace {

constexpr const char* kValidProbes = "ops, perf:EVENT (e.g. perf:task-clock), samples[:HZ]";

[[noreturn]] void bad_probe(const std::string& flag, const std::string& name,
                            const std::string& why) {
  throw UserError(flag + ": " + why + " '" + name + "' (valid: " + kValidProbes + ")");
}

std::vector<CounterDescription> describe(const std::vector<probes::CounterReading>& readings) {
  std::vector<CounterDescription> d;
  for (const probes::CounterReading& r : readings) d.push_back({r.name, r.supported, r.reason});
  return d;
}

CounterSnapshot snapshot(const probes::CounterReading& r) {
  return {r.raw, r.time_enabled_ns, r.time_running_ns};
}

}  // namespace

ProbeSpec parse_probes(const std::string& text, const std::string& flag) {
  ProbeSpec spec;
  if (text.empty()) return spec;
  size_t begin = 0;
  for (;;) {
    const size_t comma = text.find(',', begin);
    const std::string name = text.substr(begin, comma - begin);
    if (name.empty()) {
      bad_probe(flag, text, "an empty probe name in");
    } else if (name == "ops") {
      spec.ops = true;
    } else if (name.rfind("perf:", 0) == 0) {
      const std::string event = name.substr(5);
      if (event.empty()) bad_probe(flag, name, "perf: needs an event name in");
      if (std::find(spec.perf_events.begin(), spec.perf_events.end(), event) ==
          spec.perf_events.end()) {
        spec.perf_events.push_back(event);
      }
    } else if (name == "samples") {
      spec.samples = true;
    } else if (name.rfind("samples:", 0) == 0) {
      const std::string hz = name.substr(8);
      char* end = nullptr;
      const long value = std::strtol(hz.c_str(), &end, 10);
      if (hz.empty() || *end != '\0' || value < 1 || value > 10000) {
        bad_probe(flag, name, "the sampling rate must be 1..10000 Hz in");
      }
      spec.samples = true;
      spec.sample_hz = static_cast<int>(value);
    } else {
      bad_probe(flag, name, "unknown probe");
    }
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return spec;
}

int64_t default_probe_iterations(const Measurement& m, double min_time_s) {
  const int64_t measured = static_cast<int64_t>(m.real_ns.size());
  const double median = stats::median_of(m.real_ns);
  const double budget_ns = std::max(1.0, min_time_s) * 1e9;
  const int64_t fit = median > 0 ? static_cast<int64_t>(std::ceil(budget_ns / median)) : measured;
  return std::max<int64_t>(3, std::min(measured, fit));
}

void check_probe_events(const ProbeSpec& spec) {
  if (!spec.perf_events.empty()) probes::PerfCounters::open(spec.perf_events);
}

RungProbes probe_rung(runtime::Executor& executor, const std::vector<ir::Tensor>& inputs,
                      const ProbeSpec& spec, int64_t iterations, const std::string& samples_path) {
  CUVIL_CHECK(iterations >= 1, "probe_rung needs at least one iteration");
  RungProbes result;
  std::optional<probes::PerfCounters> counters;
  if (!spec.perf_events.empty()) {
    counters.emplace(probes::PerfCounters::open(spec.perf_events));
    counters->attach_threads();  // the executor's pool exists by now
  }
  std::unique_ptr<OpProfiler> profiler;
  if (spec.ops) {
    CounterSnapshotFn read;
    if (counters) {
      read = [&counters](std::vector<CounterSnapshot>& out) {
        const std::vector<probes::CounterReading> readings = counters->read();
        out.resize(readings.size());
        for (size_t i = 0; i < readings.size(); ++i) out[i] = snapshot(readings[i]);
      };
    }
    profiler = std::make_unique<OpProfiler>(executor.plan().steps.size(), std::move(read));
    profiler->reserve(iterations);
  }
  std::optional<probes::StackSampler> sampler;
  if (spec.samples) sampler.emplace(probes::StackSampler::start(spec.sample_hz));
  if (counters) counters->start();
  executor.set_observer(profiler.get());
  try {
    for (int64_t i = 0; i < iterations; ++i) {
      const int64_t t0 = probes::now_ns();
      executor.run(inputs);
      result.probe_real_ns.push_back(static_cast<double>(probes::now_ns() - t0));
    }
  } catch (...) {
    executor.set_observer(nullptr);
    throw;
  }
  executor.set_observer(nullptr);
  if (counters) counters->stop();
  if (sampler) {
    sampler->stop();
    sampler->write_folded(samples_path);
    result.samples_file = samples_path;
    result.samples_method = sampler->method();
  }
  if (counters) {
    const double n = static_cast<double>(iterations);
    const std::vector<probes::CounterReading> totals = counters->read();
    result.derived = probes::derived_metrics(totals);  // ratios: the same per run or in total
    result.counters_scope = counters->scope();
    for (const probes::CounterReading& r : totals) {
      CounterValue v{r.name, r.supported, r.reason};
      if (r.supported) {
        v.value = r.value / n;
        v.raw = static_cast<double>(r.raw) / n;
        v.scale = r.scale;
        v.time_enabled_ns = static_cast<double>(r.time_enabled_ns) / n;
        v.time_running_ns = static_cast<double>(r.time_running_ns) / n;
      }
      result.counters.push_back(std::move(v));
    }
  }
  if (profiler) {
    result.ops_enabled = true;
    std::vector<CounterDescription> described;
    if (counters) described = describe(counters->read());
    result.ops = ops_profile(executor.plan(), *profiler, described);
  }
  return result;
}

}  // namespace cuvil::bench
