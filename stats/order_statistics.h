// Order statistics of samples: the median, nearest-rank percentiles and the distribution-free
// interval of the median. The one median of the project: the harness, the tuner and the reports
// all take it from here.
#pragma once

#include <cstdint>
#include <vector>

namespace cuvil::stats {

inline constexpr double kConfidenceLevel = 0.95;

struct Interval {
  double low = 0;
  double high = 0;
};

// Median of the samples (mean of the middle two for an even count); 0 when empty.
double median_of(std::vector<double> samples);

// The same, reordering `samples` in place (no copy; for hot loops such as the bootstrap).
double median_in_place(std::vector<double>& samples);

// Nearest-rank percentile of ascending `sorted` samples, `percent` in [0, 100]; 0 when empty.
double nearest_rank_percentile(const std::vector<double>& sorted, double percent);

// Quantile `q` in [0, 1] of ascending `sorted` samples, interpolating linearly between the order
// statistics around position q * (n - 1) (Hyndman and Fan's type 7, numpy's default): smooth in
// q, for summarising bootstrap replicates; 0 when empty.
double linear_quantile(const std::vector<double>& sorted, double q);

// Distribution-free interval of the median from order statistics: [x_(k), x_(n+1-k)] with the
// largest k whose binomial(n, 1/2) coverage is at least `level`. Exact for any continuous
// distribution and cheap (two selections), so the stopping rule can evaluate it as samples arrive.
// Below the smallest n that reaches `level` (6 samples for 95%) it is [min, max].
Interval order_statistic_median_ci(std::vector<double> samples, double level);

// The 1-based rank k of order_statistic_median_ci for n samples (0 when no k reaches `level`).
int64_t median_ci_rank(int64_t n, double level);

}  // namespace cuvil::stats
