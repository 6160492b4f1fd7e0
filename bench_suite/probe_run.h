// `run --probes`: what the user asked to observe (parse_probes) and the probe iterations that
// observe it (probe_rung): per-op regions, run-level and per-op perf counters, stack samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_suite/json_report.h"
#include "bench_suite/measure.h"
#include "passes/ir/tensor.h"
#include "runtime/executor.h"

namespace cuvil::bench {

inline constexpr int kDefaultSampleHz = 997;  // prime: does not beat with periodic work

struct ProbeSpec {
  bool ops = false;                      // "ops": per-op regions
  std::vector<std::string> perf_events;  // "perf:EVENT", in the order given
  bool samples = false;                  // "samples" or "samples:HZ"
  int sample_hz = kDefaultSampleHz;
  bool any() const { return ops || samples || !perf_events.empty(); }
};

// "ops,perf:task-clock,samples:499" -> ProbeSpec. Unknown or malformed names -> UserError naming
// `flag` and the valid names. Empty text -> no probes.
ProbeSpec parse_probes(const std::string& text, const std::string& flag = "--probes");

// How many probe iterations follow a measurement when the user did not say: as many as were
// measured, at most about max(1 s, min_time_s) of them at the measured median, and at least 3.
int64_t default_probe_iterations(const Measurement& measurement, double min_time_s);

// Fails early (UserError) on perf event names libpfm4 does not know, before a long measurement.
void check_probe_events(const ProbeSpec& spec);

// Runs `iterations` more runs of `executor` with the probes of `spec` on and returns what they
// recorded (OpsProfile, counters per iteration, the folded stacks written to `samples_path`).
RungProbes probe_rung(runtime::Executor& executor, const std::vector<ir::Tensor>& inputs,
                      const ProbeSpec& spec, int64_t iterations, const std::string& samples_path);

}  // namespace cuvil::bench
