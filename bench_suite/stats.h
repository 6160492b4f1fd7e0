// Summary statistics of timing samples: location, spread, nearest-rank percentiles and confidence
// intervals for the median. Pure functions of the samples (the bootstrap is seeded), so every
// figure is reproducible from the raw samples stored in run.json.
#pragma once

#include <cstdint>
#include <vector>

namespace cuvil::bench {

inline constexpr double kConfidenceLevel = 0.95;
inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 0x5eed'c0de'2024ULL;

struct Interval {
  double low = 0;
  double high = 0;
};

struct Summary {
  int64_t count = 0;
  double min = 0, max = 0, mean = 0, median = 0;
  double stddev = 0;  // sample standard deviation (n - 1), as Google Benchmark's
  double cv = 0;      // stddev / mean, as Google Benchmark's "cv" aggregate
  // Nearest-rank percentiles: the smallest sample with at least p% of samples <= it. Unlike
  // `median`, p50 is always one of the samples (no averaging of the middle two).
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0;
  // Bootstrap percentile interval of the median (kBootstrapResamples resamples, kBootstrapSeed).
  Interval median_ci;
  double ci_level = kConfidenceLevel;
};

Summary summarize(const std::vector<double>& samples);

// Nearest-rank percentile of ascending `sorted` samples, `percent` in [0, 100]; 0 when empty.
double nearest_rank_percentile(const std::vector<double>& sorted, double percent);

// Median of the samples (mean of the middle two for an even count); 0 when empty.
double median_of(std::vector<double> samples);

// Percentile bootstrap interval of the median: `resamples` resamples with replacement drawn
// from a generator seeded with `seed` (same inputs, same interval, on every platform).
Interval bootstrap_median_ci(const std::vector<double>& samples, double level, int resamples,
                             uint64_t seed);

// Distribution-free interval of the median from order statistics: [x_(k), x_(n+1-k)] with the
// largest k whose binomial(n, 1/2) coverage is at least `level`. Exact for any continuous
// distribution and cheap (two selections), so the stopping rule can evaluate it as samples arrive.
// Below the smallest n that reaches `level` (6 samples for 95%) it is [min, max].
Interval order_statistic_median_ci(std::vector<double> samples, double level);

// The 1-based rank k of order_statistic_median_ci for n samples (0 when no k reaches `level`).
int64_t median_ci_rank(int64_t n, double level);

}  // namespace cuvil::bench
