// The MLPerf LoadGen scenarios against a Sut: SingleStream, Offline, and one Server run at an
// offered QPS. Latency is completion minus arrival, so time spent queueing counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench_suite/serve/clock.h"
#include "bench_suite/serve/latency.h"
#include "bench_suite/serve/sut.h"

namespace cuvil::bench::serve {

// How long each scenario run (and each Server step) lasts: at least this many queries AND at
// least this long (MLPerf's rule, with far smaller minimums than its 600 s / 270k queries).
struct LoadOptions {
  int64_t min_queries = 64;
  double min_duration_s = 5.0;
  uint64_t seed = 1;  // Poisson arrivals
};

// Latency bounds a run must meet at p99. For a SUT with decode tokens, p99_ms bounds the time to
// first token and tpot_p99_ms the time per output token; otherwise p99_ms bounds the latency.
struct LatencyTarget {
  double p99_ms = 0;
  double tpot_p99_ms = 0;
};

struct ScenarioResult {
  std::string scenario;     // single-stream | offline | server
  std::string phase;        // server: "step" (stepping up) or "bisect"; else the scenario
  double offered_qps = 0;   // server: the Poisson rate; 0 for the other scenarios
  double achieved_qps = 0;  // queries / (last completion - start)
  int64_t queries = 0;
  int64_t batches = 0;
  LatencyStats latency;              // completion - arrival
  std::optional<LatencyStats> ttft;  // first output - arrival (SUTs with decode tokens)
  std::optional<LatencyStats> tpot;  // (completion - first output) / decode tokens
  // Server: offered QPS x busy time per query, the steady-state fraction of time the server
  // would be busy at this rate; >= 1 means the queue grows without bound. Else busy / elapsed.
  double load = 0;
  bool valid = true;
  std::string verdict;  // why it is valid or not, one line
};

ScenarioResult run_single_stream(Sut& sut, Clock& clock, const LoadOptions& load);
// All `queries` arrive at once; the SUT takes them in full batches.
ScenarioResult run_offline(Sut& sut, Clock& clock, int64_t queries);
ScenarioResult run_server(Sut& sut, Clock& clock, double offered_qps, const LoadOptions& load);

// Sets valid/verdict: the p99 bounds, and for Server runs the load below 1.
void judge(ScenarioResult& result, const LatencyTarget& target);

// Service times of full batches, after one untimed warm-up batch.
struct Calibration {
  int64_t batch = 1;
  double service_ms = 0;       // median batch time, arrival of the batch to its completion
  double first_output_ms = 0;  // median time to the first output
  double per_token_ms = 0;     // median (done - first output) / decode tokens; 0 without tokens
  double capacity_qps() const { return service_ms > 0 ? batch * 1e3 / service_ms : 0; }
};
Calibration calibrate(Sut& sut, Clock& clock, int batches);

// Whether a lone batch already misses the target, and if so why (then no load meets it).
std::optional<std::string> unreachable_target(const Calibration& c, const Sut& sut,
                                              const LatencyTarget& target);

}  // namespace cuvil::bench::serve
