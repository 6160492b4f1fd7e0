#include "stats/bootstrap.h"

#include <algorithm>

#include "base/splitmix64.h"

namespace cuvil::stats {

Interval bootstrap_median_ci(const std::vector<double>& samples, double level, int resamples,
                             uint64_t seed) {
  const size_t n = samples.size();
  if (n == 0 || resamples <= 0) return {};
  SplitMix64 rng{seed};
  std::vector<double> medians(static_cast<size_t>(resamples));
  std::vector<double> draw(n);
  for (double& m : medians) {
    for (double& x : draw) x = samples[rng.below(n)];
    m = median_in_place(draw);
  }
  std::sort(medians.begin(), medians.end());
  return {nearest_rank_percentile(medians, 100.0 * (1.0 - level) / 2.0),
          nearest_rank_percentile(medians, 100.0 * (1.0 + level) / 2.0)};
}

}  // namespace cuvil::stats
