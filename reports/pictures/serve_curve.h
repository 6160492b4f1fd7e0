// `cuvil-bench serve -o OUT.json` (Server scenario): the latency-versus-offered-load curve,
// OUT.load-latency.svg. Each step's p50, p90 and p99 over the offered QPS, the bands between them,
// the SLO as a horizontal line and the knee (the highest offered load meeting it) as a vertical
// one; steps that missed the target are drawn as red rings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuvil::reports::pictures {

struct LoadStep {
  double offered_qps = 0, achieved_qps = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0;
  int64_t queries = 0;
  bool valid = true;
  std::string verdict;
};

struct LoadLatencyCurve {
  std::string name;                 // "resnet50/b1"
  std::string latency = "latency";  // what the percentiles are of: "time to first token"
  double slo_ms = 0;                // the p99 bound; 0: none
  double capacity_qps = 0;          // the calibration's; 0: unknown
  std::vector<LoadStep> steps;      // in any order
  std::optional<size_t> knee;       // index into steps
  std::string note;                 // why there is no knee; shown under the title
};

// The <svg> element; every step is a point (class "point step", "invalid" when it missed).
std::string load_latency_svg(const LoadLatencyCurve& curve);

}  // namespace cuvil::reports::pictures
