#include "bench_suite/stopping_rule.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "stats/summary.h"

namespace cuvil::bench {

namespace {
constexpr double kNsPerS = 1e9;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}  // namespace

void StoppingCriteria::validate() const {
  if (warmup_iterations < 0) throw UserError("--warmup must be >= 0");
  if (!(warmup_time_s >= 0)) throw UserError("--warmup-time must be >= 0 seconds");
  if (min_samples < 1) throw UserError("--min-samples must be >= 1");
  if (max_samples < min_samples) throw UserError("--max-samples must be >= --min-samples");
  if (!(min_time_s >= 0)) throw UserError("--min-time must be >= 0 seconds");
  if (!(max_noise > 0 && max_noise < 1)) {
    throw UserError("--max-noise must be a fraction in (0, 1), e.g. 0.02 for 2%");
  }
  if (!(timeout_s >= min_time_s)) throw UserError("--timeout must be >= --min-time");
}

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::running:
      return "running";
    case StopReason::converged:
      return "converged";
    case StopReason::timeout:
      return "timeout";
    case StopReason::max_samples:
      return "max_samples";
  }
  return "unknown";
}

double relative_median_noise(const std::vector<double>& samples) {
  if (samples.size() < 2) return kInfinity;
  const double median = stats::median_of(samples);
  if (!(median > 0)) return kInfinity;
  const stats::Interval ci = stats::order_statistic_median_ci(samples, kNoiseConfidence);
  return 0.5 * (ci.high - ci.low) / median;
}

StoppingRule::StoppingRule(const StoppingCriteria& criteria)
    : criteria_(criteria), noise_(kInfinity) {}

bool StoppingRule::needs_warmup(int64_t runs, double total_ns) const {
  return runs < criteria_.warmup_iterations || total_ns < criteria_.warmup_time_s * kNsPerS;
}

bool StoppingRule::should_stop(const std::vector<double>& samples) {
  for (; summed_ < samples.size(); ++summed_) elapsed_ns_ += samples[summed_];
  const size_t n = samples.size();
  auto evaluate = [&] {
    if (last_evaluated_ != n) noise_ = relative_median_noise(samples);
    last_evaluated_ = n;
  };
  auto finish = [&](StopReason unless_converged) {
    evaluate();
    reason_ = noise_ <= criteria_.max_noise ? StopReason::converged : unless_converged;
    return true;
  };

  const bool floors_met = n >= static_cast<size_t>(criteria_.min_samples) &&
                          elapsed_ns_ >= criteria_.min_time_s * kNsPerS;
  if (floors_met) {
    const bool first = last_evaluated_ == 0;
    const double due = static_cast<double>(last_evaluated_) * (1.0 + kNoiseRecheckGrowth);
    if (first || static_cast<double>(n) >= due) {
      evaluate();
      if (noise_ <= criteria_.max_noise) return finish(StopReason::converged);
    }
  }
  if (n >= static_cast<size_t>(criteria_.max_samples)) return finish(StopReason::max_samples);
  if (n >= static_cast<size_t>(criteria_.min_samples) &&
      elapsed_ns_ >= criteria_.timeout_s * kNsPerS) {
    return finish(StopReason::timeout);
  }
  return false;
}

double StoppingRule::eta_s(const std::vector<double>& samples) const {
  const double n = static_cast<double>(samples.size());
  if (n == 0) return criteria_.timeout_s;
  const double elapsed_s = elapsed_ns_ / kNsPerS;
  const double per_sample_s = elapsed_s / n;
  double noise_samples = 0;
  if (std::isfinite(noise_) && noise_ > criteria_.max_noise) {
    const double ratio = noise_ / criteria_.max_noise;
    noise_samples = n * ratio * ratio - n;
  } else if (!std::isfinite(noise_)) {
    noise_samples = 1;
  }
  noise_samples = std::min(noise_samples, criteria_.max_samples - n);
  // The timeout ends sampling whatever the noise, but never before min_samples.
  const double until_quiet =
      std::max(noise_samples * per_sample_s, criteria_.min_time_s - elapsed_s);
  const double until_min_samples = std::max(0.0, criteria_.min_samples - n) * per_sample_s;
  const double eta =
      std::max(until_min_samples, std::min(until_quiet, criteria_.timeout_s - elapsed_s));
  return std::max(eta, 0.0);
}

}  // namespace cuvil::bench
