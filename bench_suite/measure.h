// The measurement loop: warm-up, then samples until the stopping rule (stopping_rule.h) ends
// sampling. Every sample is kept, warm-up runs included. `run`, `tune` and the nightly job all
// measure through measure(); the sampler overload is the same loop with the workload injected,
// which is how tests drive it with synthetic samples and how the harness overhead is measured.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "bench_suite/settle.h"
#include "bench_suite/stopping_rule.h"
#include "passes/ir/tensor.h"
#include "runtime/executor.h"

namespace cuvil::bench {

using MeasureOptions = StoppingCriteria;

// One run of the workload, timed.
struct Sample {
  double real_ns = 0;  // wall time
  double cpu_ns = 0;   // process CPU time (all threads)
};
using Sampler = std::function<Sample()>;

// Times `work` with the measurement clocks (probes/clock.h).
Sampler timed_sampler(std::function<void()> work);

struct Measurement {
  std::vector<double> real_ns;         // wall time per sample
  std::vector<double> cpu_ns;          // process CPU time per sample (all threads)
  std::vector<double> warmup_real_ns;  // the warm-up runs, kept but not summarised
  StopReason stop_reason = StopReason::running;
  // Sampling ended without reaching max_noise, or the samples drifted (measure_interleaved: the
  // former only, as the workloads taking turns meet a drift alike).
  bool noisy = false;
  // The spread of the samples' block medians in percent (0: too few samples to cut) and whether
  // it is material (stopping_rule.h, point 3).
  double drift_pct = 0;
  bool drifted = false;
  double noise = 0;      // final relative half-width of the median's interval (inf if unknown)
  double max_noise = 0;  // the target it was held to
  // measure_interleaved: this workload's turns, how many began with the processes still busy
  // after the settle's max_s, and the idle time spent settling before them.
  int64_t turns = 0;
  int64_t unsettled_turns = 0;
  double settle_s = 0;
};

// What the progress callback sees after each warm-up run and each sample.
struct MeasureProgress {
  bool warming_up = false;
  int64_t warmup_runs = 0;
  int64_t samples = 0;
  double noise = 0;  // inf until first evaluated
  double eta_s = 0;
  // The samples so far (wall ns), valid during the call only; null while warming up. The tuner
  // prunes within a rung from them (tuner/trial.h).
  const std::vector<double>* samples_ns = nullptr;
  bool last = false;  // sampling stops after this sample (the workload's own rule was met)
};
using ProgressFn = std::function<void(const MeasureProgress&)>;

Measurement measure(const Sampler& sampler, const MeasureOptions& options,
                    const ProgressFn& progress = {});

// Several workloads measured in turns, as `run --baseline` compares cuvil with PyTorch. Each
// round, every workload takes a turn: the machine settles (settle.h), one untimed run (kept with
// the warm-up runs), then samples for about `turn_s`; the order rotates from round to round.
// Rounds go on until every workload's own stopping rule is met (one met early keeps taking turns,
// up to its max_samples, so all samples cover the same stretch of time). Load that comes and goes
// hits them all alike, and their ratios hold on a noisy machine.
//
// Why settle and the untimed run: runtimes whose idle threads spin after a call keep the CPUs
// busy after their turn (OpenMP's ~10-20 ms, OpenBLAS's ~100 ms), which would otherwise slow the
// next workload's first samples. The settle waits for this process and its helpers (the
// processes the other workloads run in) to go quiet (settle.h).
struct InterleaveOptions {
  SettleOptions settle;
  double turn_s = 0.25;
};
using InterleavedProgressFn = std::function<void(size_t workload, const MeasureProgress&)>;
std::vector<Measurement> measure_interleaved(const std::vector<Sampler>& samplers,
                                             const MeasureOptions& options,
                                             const InterleavedProgressFn& progress = {},
                                             const InterleaveOptions& turns = {});

// One timed run of the plan on `inputs` per call. Shapes are checked once, here; the inputs stay
// resident (read where the caller holds them, which must outlive the sampler) and each sample
// times the plan's steps only: nothing copied in or out (json_report.h's kTimedRegion).
Sampler executor_sampler(runtime::Executor& executor, const std::vector<ir::Tensor>& inputs);

// The plan's executor on `inputs` (the single entry point for real workloads).
Measurement measure(runtime::Executor& executor, const std::vector<ir::Tensor>& inputs,
                    const MeasureOptions& options, const ProgressFn& progress = {});

}  // namespace cuvil::bench
