// The serving results: a latency-versus-throughput table on stdout with the knee marked, and the
// same curve as JSON.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_suite/serve/scenarios.h"
#include "bench_suite/serve/server_search.h"

namespace cuvil::bench::serve {

struct ServeReport {
  std::string suite, rung, scenario;
  std::string query;  // what one query is (QueryWorkload::summary)
  LatencyTarget target;
  LoadOptions load;
  int threads = 1;
  Calibration calibration;
  std::vector<ScenarioResult> results;  // single-stream/offline: one; server: the curve
  std::optional<size_t> knee;           // server: index into results
  std::string note;
  std::vector<std::string> warnings;  // e.g. a p99 over too few queries (few_queries_warning)
};

// The warnings of a finished report: one for the run with the fewest queries when its p99 is
// only their maximum.
std::vector<std::string> report_warnings(const ServeReport& report);

// Rows sorted by offered QPS (the curve), the knee row marked "<- knee".
void print_table(std::FILE* out, const ServeReport& report);

// {"suite", "rung", "scenario", "query", "targets", "load", "calibration", "curve": [...],
//  "knee": {...} | null, "note"}; times in ms.
nlohmann::json report_json(const ServeReport& report);

}  // namespace cuvil::bench::serve
