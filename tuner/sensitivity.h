// One-at-a-time sensitivity around the best configuration: each searched parameter moved one
// step on its own scale (up and down; a choice to each other value; a boolean or a pass switch
// flipped), every other parameter held, and each neighbour measured side by side with the best
// (side_by_side.h). Where SHAP says what mattered across the whole study, this says what matters
// HERE: a parameter whose neighbours all measure within noise of the best is flat around it.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/search_space.h"
#include "tuner/side_by_side.h"

namespace cuvil::tuner {

struct Neighbour {
  std::string param;        // the dimension moved
  std::string move;         // "up", "down", "other" (a choice), "flip" (a boolean)
  nlohmann::json from, to;  // its value in the best configuration and here
  nlohmann::json values;    // the whole configuration
};

// The steps: power-of-two and log-scale integers x2 and /2; multiples of another parameter by
// one base; other integers by their step; log-scale reals x2 and /2, other reals by a tenth of
// their range; every value clamped to the dimension's range, and a step that lands back on the
// same value dropped. Only dimensions the space searches, and only those whose pass is on in
// `best` (a switch itself is flipped either way). Deterministic, in space order.
std::vector<Neighbour> one_step_neighbours(const SearchSpace& space, const nlohmann::json& best);

struct SensitivityRow {
  Neighbour neighbour;
  std::string failure;  // "" when measured: invalid configuration, wrong result, crash ...
  TimeRatio ratio;      // neighbour time / best time: above 1, the move makes it slower
};

// Measures every neighbour against the best, each pair in its own isolated child process.
// `progress` (optional) sees each row as it is measured.
std::vector<SensitivityRow> sensitivity_sweep(
    const SearchSpace& space, const nlohmann::json& best, const SideBySideOptions& options,
    const std::function<void(const SensitivityRow&, size_t index, size_t total)>& progress = {});

// The rows as JSON (for the provenance and scripts), and as a terminal table.
nlohmann::json sensitivity_to_json(const std::vector<SensitivityRow>& rows);
std::string format_sensitivity(const std::vector<SensitivityRow>& rows);

}  // namespace cuvil::tuner
