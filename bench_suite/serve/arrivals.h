// Poisson arrivals for the Server scenario: exponential inter-arrival times from a seeded
// generator whose output is the same on every machine.
#pragma once

#include <cstdint>
#include <vector>

namespace cuvil::bench::serve {

// Arrival times (ns after the start, increasing) of a Poisson process at `qps` queries per
// second: at least `min_queries` of them, continuing until one arrives at or after
// `min_duration_ns` (MLPerf runs for a minimum query count AND a minimum duration).
//
// The same seed gives the same unit-rate sequence scaled by 1/qps ("common random numbers"):
// queueing delay then grows monotonically with qps, so bisecting on qps is well defined.
std::vector<int64_t> poisson_arrivals(double qps, uint64_t seed, int64_t min_queries,
                                      int64_t min_duration_ns);

}  // namespace cuvil::bench::serve
