#include "bench_suite/serve/arrivals.h"

#include <cmath>

#include "base/error.h"

namespace cuvil::bench::serve {

namespace {

// SplitMix64: a fixed, portable generator (std:: distributions differ between libraries).
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 53 random bits.
double uniform01(uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

}  // namespace

std::vector<int64_t> poisson_arrivals(double qps, uint64_t seed, int64_t min_queries,
                                      int64_t min_duration_ns) {
  if (!(qps > 0) || !std::isfinite(qps)) throw UserError("offered QPS must be > 0");
  if (min_queries < 1) throw UserError("minimum query count must be >= 1");
  std::vector<int64_t> arrivals;
  uint64_t state = seed;
  double t_s = 0;
  while (static_cast<int64_t>(arrivals.size()) < min_queries || arrivals.back() < min_duration_ns) {
    // Inverse CDF of the exponential distribution; -log1p(-u) is exact for small u.
    t_s += -std::log1p(-uniform01(state)) / qps;
    arrivals.push_back(static_cast<int64_t>(std::llround(t_s * 1e9)));
  }
  return arrivals;
}

}  // namespace cuvil::bench::serve
