#include "bench_suite/serve/latency.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "passes/ir/error.h"

namespace cuvil::bench::serve {

double nearest_rank_percentile(std::vector<double> samples, double p) {
  CUVIL_CHECK(!samples.empty(), "percentile of no samples");
  CUVIL_CHECK(p > 0 && p <= 100, "percentile " + std::to_string(p));
  const double n = static_cast<double>(samples.size());
  // The small slack keeps p * n / 100 from rounding up past an exact rank (99.9 is inexact).
  const int64_t rank = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(p * n / 100.0 - 1e-9)), 1,
                                           static_cast<int64_t>(samples.size()));
  std::nth_element(samples.begin(), samples.begin() + (rank - 1), samples.end());
  return samples[rank - 1];
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
  s.p50_ms = nearest_rank_percentile(ms, 50);
  s.p90_ms = nearest_rank_percentile(ms, 90);
  s.p99_ms = nearest_rank_percentile(ms, 99);
  s.max_ms = *std::max_element(ms.begin(), ms.end());
  return s;
}

}  // namespace cuvil::bench::serve
