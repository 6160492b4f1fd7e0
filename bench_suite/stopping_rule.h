// When to stop sampling: the one place that decides, with its constants named.
//
// 1. Warm-up: untimed-for-the-result runs until at least `warmup_iterations` ran AND they took at
//    least `warmup_time_s` (caches, page faults, thread wake-up, frequency ramp).
// 2. Sampling: one sample per run of the workload. Sampling may stop once at least `min_samples`
//    were taken AND they add up to at least `min_time_s`. It stops ("converged") as soon as the
//    noise is at most `max_noise`; otherwise it stops at `timeout_s` of sampled time or at
//    `max_samples` samples, and the result is NOISY.
//
// Noise is the half-width of the distribution-free 95% confidence interval of the median
// (order statistics, see stats.h) relative to the median: "the median we report is known to
// +-noise". Unlike stddev/median it shrinks as samples accumulate and ignores the rare outlier
// a shared machine produces, so it measures how well we know the number we report. With fewer
// than 6 samples no order-statistic interval reaches 95%, so the whole range is used instead;
// with fewer than 2 the noise is unknown (infinite).
//
// 3. Drift: when sampling ends, the caller has the rule judge all its samples (judge_drift; the
//    measure loops do, after their last sample), cut in time order into blocks (stats/blocks.h).
//    If the blocks' medians spread more than kMaterialDrift x max_noise and further than shuffled
//    samples' blocks do (permutation p < kDriftAlpha), the machine's speed changed during the
//    run, and the result is NOISY too: the interval in point 2 assumes a steady machine, and the
//    median depends on when the run happened to be taken.
//
// Time is measured time: the sum of the samples, as Google Benchmark's min_time. The rule sees
// only sample values, never a clock, so tests drive it with synthetic sample streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stats/blocks.h"

namespace cuvil::bench {

inline constexpr int kDefaultWarmupIterations = 1;
inline constexpr double kDefaultWarmupTimeS = 0.1;
inline constexpr int kDefaultMinSamples = 5;
inline constexpr int kDefaultMaxSamples = 10000;  // also bounds memory and the bootstrap's cost
inline constexpr double kDefaultMinTimeS = 0.5;
inline constexpr double kDefaultMaxNoise = 0.02;  // +-2% on the median
inline constexpr double kDefaultTimeoutS = 30.0;  // per rung, of sampled time
inline constexpr double kNoiseConfidence = 0.95;
// A drift is material above this multiple of max_noise (4% at the default +-2%), and shown
// when the permutation test's p is below kDriftAlpha.
inline constexpr double kMaterialDrift = 2.0;
inline constexpr double kDriftAlpha = 0.01;
// The noise is re-evaluated once the sample count grew by this fraction since the last
// evaluation, which keeps its cost amortised O(1) per sample on long runs.
inline constexpr double kNoiseRecheckGrowth = 0.05;

struct StoppingCriteria {
  int warmup_iterations = kDefaultWarmupIterations;
  double warmup_time_s = kDefaultWarmupTimeS;
  int min_samples = kDefaultMinSamples;
  int max_samples = kDefaultMaxSamples;
  double min_time_s = kDefaultMinTimeS;
  double max_noise = kDefaultMaxNoise;
  double timeout_s = kDefaultTimeoutS;

  // UserError naming the flag when the criteria contradict each other or are out of range.
  void validate() const;
};

enum class StopReason { running, converged, timeout, max_samples };
const char* to_string(StopReason reason);

// Relative half-width of the order-statistic confidence interval of the median (see above).
double relative_median_noise(const std::vector<double>& samples);

class StoppingRule {
 public:
  explicit StoppingRule(const StoppingCriteria& criteria);

  // True while another warm-up run is needed after `runs` runs that took `total_ns`.
  bool needs_warmup(int64_t runs, double total_ns) const;

  // Called after each sample with every sample so far: true when sampling ends; reason() then
  // says why and noise() holds the final noise.
  bool should_stop(const std::vector<double>& samples);

  StopReason reason() const { return reason_; }
  bool noisy() const { return unconverged() || drifted(); }
  // Sampling ended without the median known to max_noise (point 2).
  bool unconverged() const {
    return reason_ == StopReason::timeout || reason_ == StopReason::max_samples;
  }
  // Judges the final samples' drift (point 3), once sampling ended: measure_interleaved samples
  // on after the rule was met. drift() is then the verdict, drifted() whether it makes them
  // NOISY (no drift before the call).
  void judge_drift(const std::vector<double>& samples) { drift_ = stats::block_drift(samples); }
  const stats::BlockDrift& drift() const { return drift_; }
  bool drifted() const {
    return drift_.p_value < kDriftAlpha &&
           drift_.spread_pct > kMaterialDrift * criteria_.max_noise * 100;
  }
  // The noise at the last evaluation (infinity before the first).
  double noise() const { return noise_; }
  double elapsed_ns() const { return elapsed_ns_; }
  // Seconds of sampling still expected: the floors not yet met, and while the noise is above the
  // target, the samples it should take for it to shrink (noise ~ 1/sqrt(n)), capped by the
  // timeout and max_samples.
  double eta_s(const std::vector<double>& samples) const;

  const StoppingCriteria& criteria() const { return criteria_; }

 private:
  StoppingCriteria criteria_;
  StopReason reason_ = StopReason::running;
  double noise_;
  stats::BlockDrift drift_;
  double elapsed_ns_ = 0;
  size_t summed_ = 0;          // samples already added into elapsed_ns_
  size_t last_evaluated_ = 0;  // sample count at the last noise evaluation
};

}  // namespace cuvil::bench
