#include "bench_suite/serve/latency.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "stats/summary.h"

namespace cuvil::bench::serve {

double nearest_rank_percentile(std::vector<double> samples, double p) {
  CUVIL_CHECK(!samples.empty(), "percentile of no samples");
  CUVIL_CHECK(p > 0 && p <= 100, "percentile " + std::to_string(p));
  std::sort(samples.begin(), samples.end());
  return stats::nearest_rank_percentile(samples, p);  // the harness's definition, shared
}

LatencyStats latency_stats(const std::vector<int64_t>& latencies_ns) {
  LatencyStats s;
  if (latencies_ns.empty()) return s;
  std::vector<double> ms;
  ms.reserve(latencies_ns.size());
  double sum = 0;
  for (int64_t ns : latencies_ns) {
    ms.push_back(static_cast<double>(ns) * 1e-6);
    sum += ms.back();
  }
  s.count = static_cast<int64_t>(ms.size());
  s.mean_ms = sum / static_cast<double>(ms.size());
  std::sort(ms.begin(), ms.end());  // once, for the three percentiles
  s.p50_ms = stats::nearest_rank_percentile(ms, 50);
  s.p90_ms = stats::nearest_rank_percentile(ms, 90);
  s.p99_ms = stats::nearest_rank_percentile(ms, 99);
  s.max_ms = ms.back();
  return s;
}

int64_t samples_for_percentile(double p) {
  CUVIL_CHECK(p > 0 && p < 100, "percentile " + std::to_string(p));
  // ceil(p/100 * n) < n  <=>  n > 100 / (100 - p); in integers for p99: n >= 100.
  int64_t n = 1;
  while (static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(n))) >= n) ++n;
  return n;
}

std::optional<std::string> few_queries_warning(const std::string& what, int64_t queries) {
  const int64_t needed = samples_for_percentile(99);
  if (queries >= needed) return std::nullopt;
  return what + ": p99 over " + std::to_string(queries) +
         " queries is their maximum (a nearest-rank p99 needs " + std::to_string(needed) +
         " or more; raise --min-queries or --duration)";
}

}  // namespace cuvil::bench::serve
