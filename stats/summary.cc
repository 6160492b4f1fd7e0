#include "stats/summary.h"

#include <algorithm>
#include <cmath>

#include "stats/bootstrap.h"

namespace cuvil::stats {

Summary summarize(const std::vector<double>& samples, MedianInterval interval) {
  Summary s;
  s.count = static_cast<int64_t>(samples.size());
  if (samples.empty()) return s;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  double sum = 0;
  for (double x : sorted) sum += x;
  s.mean = sum / static_cast<double>(n);
  double ss = 0;
  for (double x : sorted) ss += (x - s.mean) * (x - s.mean);
  s.stddev = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0.0;
  s.cv = s.mean > 0 ? s.stddev / s.mean : 0.0;
  s.p50 = nearest_rank_percentile(sorted, 50);
  s.p90 = nearest_rank_percentile(sorted, 90);
  s.p95 = nearest_rank_percentile(sorted, 95);
  s.p99 = nearest_rank_percentile(sorted, 99);
  s.p999 = nearest_rank_percentile(sorted, 99.9);
  if (interval == MedianInterval::bootstrap) {
    s.median_ci =
        bootstrap_median_ci(sorted, kConfidenceLevel, kBootstrapResamples, kBootstrapSeed);
  }
  return s;
}

}  // namespace cuvil::stats
