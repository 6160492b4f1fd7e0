// Percentile bootstrap of the median, seeded: the same samples give the same interval on every
// platform, so every figure is reproducible from the raw samples stored in run.json.
#pragma once

#include <cstdint>
#include <vector>

#include "stats/order_statistics.h"

namespace cuvil::stats {

inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 0x5eed'c0de'2024ULL;

// Percentile bootstrap interval of the median: `resamples` resamples with replacement drawn
// from a generator seeded with `seed`.
Interval bootstrap_median_ci(const std::vector<double>& samples, double level, int resamples,
                             uint64_t seed);

}  // namespace cuvil::stats
