// Summary statistics of timing samples: location, spread, nearest-rank percentiles and the
// median's confidence interval. The one summary type: the harness's tables and JSON, the results
// store and the reports all describe samples with it. Pure functions of the samples.
#pragma once

#include <cstdint>
#include <vector>

#include "stats/order_statistics.h"

namespace cuvil::stats {

struct Summary {
  int64_t count = 0;
  double min = 0, max = 0, mean = 0, median = 0;
  double stddev = 0;  // sample standard deviation (n - 1), as Google Benchmark's
  double cv = 0;      // stddev / mean (0 when the mean is not positive), Google Benchmark's "cv"
  // Nearest-rank percentiles: the smallest sample with at least p% of samples <= it. Unlike
  // `median`, p50 is always one of the samples (no averaging of the middle two).
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0;
  // Bootstrap percentile interval of the median (bootstrap.h's resamples and seed); [0, 0] when
  // summarize was asked for no interval.
  Interval median_ci;
  double ci_level = kConfidenceLevel;
};

// Whether summarize computes the bootstrap interval of the median: 2000 resamples cost
// milliseconds per thousand samples, which a store summarizing every benchmark of every run
// does not need.
enum class MedianInterval { bootstrap, none };

Summary summarize(const std::vector<double>& samples,
                  MedianInterval interval = MedianInterval::bootstrap);

}  // namespace cuvil::stats
