#include "reports/sample_summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cuvil::reports {

SampleSummary summarize_samples(std::vector<double> samples) {
  SampleSummary s;
  s.count = static_cast<int64_t>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  if (n > 1) {
    double squares = 0;
    for (double x : samples) squares += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(squares / static_cast<double>(n - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  return s;
}

}  // namespace cuvil::reports
