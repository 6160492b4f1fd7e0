// The Server scenario's search for the knee: the highest offered QPS whose p99 meets the target.
// Step the offered QPS up geometrically from a fraction of the calibrated capacity until the
// server saturates (offered load >= 1), then bisect between the highest rate that met the target
// and the lowest one above it that missed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_suite/serve/scenarios.h"

namespace cuvil::bench::serve {

struct SearchOptions {
  LoadOptions load;
  double start_fraction = 0.25;  // first step: this fraction of the calibrated capacity
  double step_factor = 1.5;      // each step offers this many times the previous QPS
  int bisect_steps = 4;          // halvings of the [last good, first bad] interval
  int max_steps = 24;            // stepping up stops here even if the server never saturates
  std::function<void(const ScenarioResult&)> on_step;  // progress, called after each step
};

struct ServerCurve {
  Calibration calibration;
  std::vector<ScenarioResult> steps;  // in the order run
  std::optional<size_t> knee;         // index into steps of the highest valid offered QPS
  std::string note;                   // why there is no knee, or how it was bracketed
};

// When a lone batch already misses the target (per the calibration) and the lightest step misses
// it too, the search stops after that step: no knee, and a note that says why. (A calibration
// that was pessimistic is overruled by a lightest step that meets the target.)
ServerCurve search_server(Sut& sut, Clock& clock, const Calibration& calibration,
                          const LatencyTarget& target, const SearchOptions& options);

}  // namespace cuvil::bench::serve
