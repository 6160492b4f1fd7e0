// Latency percentiles the way MLPerf reports them: nearest rank, in milliseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuvil::bench::serve {

// The nearest-rank percentile: the ceil(p/100 * n)-th smallest sample (p in (0, 100]).
// `samples` need not be sorted; it must not be empty.
double nearest_rank_percentile(std::vector<double> samples, double p);

// The fewest samples whose nearest-rank p-th percentile is not their maximum: 100 for p99, 10
// for p90 (below that ceil(p/100 * n) = n).
int64_t samples_for_percentile(double p);

// A warning when a run's p99 rests on too few queries to be more than their maximum ("p99 over
// 8 queries is their maximum ..."); nullopt when there are enough. `what` names the run.
std::optional<std::string> few_queries_warning(const std::string& what, int64_t queries);

struct LatencyStats {
  int64_t count = 0;
  double mean_ms = 0, p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
};

LatencyStats latency_stats(const std::vector<int64_t>& latencies_ns);

}  // namespace cuvil::bench::serve
