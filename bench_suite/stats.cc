#include "bench_suite/stats.h"

#include <algorithm>
#include <cmath>

namespace cuvil::bench {

Summary summarize(const std::vector<double>& samples) {
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
  // Sample standard deviation (n - 1), as Google Benchmark's stddev aggregate.
  s.stddev = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0.0;
  s.cv = s.mean > 0 ? s.stddev / s.mean : 0.0;
  return s;
}

}  // namespace cuvil::bench
