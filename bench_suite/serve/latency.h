// Latency percentiles the way MLPerf reports them: nearest rank, in milliseconds.
#pragma once

#include <cstdint>
#include <vector>

namespace cuvil::bench::serve {

// The nearest-rank percentile: the ceil(p/100 * n)-th smallest sample (p in (0, 100]).
// `samples` need not be sorted; it must not be empty.
double nearest_rank_percentile(std::vector<double> samples, double p);

struct LatencyStats {
  int64_t count = 0;
  double mean_ms = 0, p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
};

LatencyStats latency_stats(const std::vector<int64_t>& latencies_ns);

}  // namespace cuvil::bench::serve
