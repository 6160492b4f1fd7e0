// Several pipeline configurations measured side by side in one process: every configuration is
// compiled for a rung, then they take turns, a few samples each per round, for several rounds
// (the order rotated every round). Load that comes and goes on a shared machine then hits them
// all alike, so their ratio means something even when their absolute times do not. Samples are
// taken by the harness (bench::measure), as for `run` and every trial.
//
// Used by cuvil-tune-gen --confirm (default vs full best vs pruned best) and --sensitivity (the
// best vs each one-step neighbour).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_suite/ladder.h"
#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "tuner/trial_log.h"

namespace cuvil::tuner {

struct SideBySideOptions {
  bench::Suite suite;
  std::vector<bench::Rung> rungs;
  int threads = 1;
  int rounds = 30;            // turns each configuration takes per rung
  int samples_per_round = 1;  // samples per turn (1: the finest interleaving)
  int warmup_runs = 2;        // untimed runs of each configuration before the first round
  bool verify = true;         // each configuration passes the verification gate first
  bool tiny = false;          // measure the scaled-down graphs (tests)
  uint64_t seed = 1;
  double timeout_s = 900;  // the whole measurement, in its child process
  int64_t memory_mb = 0;   // the child's address-space limit; 0: none
};

struct SideBySideResult {
  // Per configuration: "" when measured, else why not (a wrong result, a crash of the child, an
  // invalid configuration). A failed measurement fails every configuration with its reason.
  std::vector<std::string> failure;
  std::vector<std::vector<RungSamples>> rungs;  // per configuration, per rung, its samples
};

// In this process (a crash takes the caller with it): for tests and for the isolated child.
SideBySideResult measure_side_by_side(const std::vector<passes::PipelineConfig>& configs,
                                      const SideBySideOptions& options);
// In a child process under the time and memory limits (trial isolation, isolation.h).
SideBySideResult measure_side_by_side_isolated(const std::vector<passes::PipelineConfig>& configs,
                                               const SideBySideOptions& options);

// The time ratio candidate / reference (below 1: the candidate is faster): the geometric mean
// over rungs of the ratio of medians, a 95% bootstrap interval, and the largest two-sided
// Mann-Whitney p-value over the rungs (stats/mann_whitney.h).
struct TimeRatio {
  double ratio = 1;
  double low = 1, high = 1;
  double p_value = 1;
};
TimeRatio time_ratio(const std::vector<RungSamples>& reference,
                     const std::vector<RungSamples>& candidate, uint64_t seed = 1);

}  // namespace cuvil::tuner
