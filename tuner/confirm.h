// cuvil-tune-gen --confirm: the study's numbers come from separate trials, possibly hours apart
// on a machine whose load changed in between. Before a pruned configuration (unimportant
// parameters reset to their defaults) replaces the full best, the default, the full best and the
// pruned best are measured again side by side in one process (side_by_side.h). The pruned one is
// kept only when its median time is within `tolerance` of the full best's (time ratio <= 1 +
// tolerance); otherwise the full best is written. Either way the speedup over the default comes
// from this side-by-side measurement, with its bootstrap interval and Mann-Whitney p-value.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "passes/cuvilpass.h"
#include "tuner/side_by_side.h"

namespace cuvil::tuner {

inline constexpr double kDefaultConfirmTolerance = 0.02;

struct ConfirmResult {
  bool pruned_differs = false;  // false: nothing was reset, the pruned IS the full best
  bool keep_pruned = false;     // what gets written
  std::string decision;         // one sentence: what was written and why
  double tolerance = kDefaultConfirmTolerance;
  TimeRatio full_vs_default;    // full best time / default time
  TimeRatio pruned_vs_full;     // pruned time / full best time (when pruned_differs)
  TimeRatio chosen_vs_default;  // the written configuration's time / default time
  std::vector<RungSamples> default_rungs, full_rungs, pruned_rungs;
  SideBySideOptions measured_with;
};

// The rule on its own: keep the pruned configuration when pruned/full <= 1 + tolerance.
bool pruned_within_tolerance(const TimeRatio& pruned_vs_full, double tolerance);

// Measures and decides. UserError when the default or the full best cannot be measured (they
// were measured as trials, so that means the machine or the build changed); a pruned
// configuration that fails (e.g. verification) is simply not kept.
ConfirmResult confirm_pruned(const passes::PipelineConfig& default_config,
                             const passes::PipelineConfig& full_best,
                             const passes::PipelineConfig& pruned, double tolerance,
                             const SideBySideOptions& options);

// The decision from samples already taken (what confirm_pruned does after measuring).
ConfirmResult decide(std::vector<RungSamples> default_rungs, std::vector<RungSamples> full_rungs,
                     std::vector<RungSamples> pruned_rungs, bool pruned_differs,
                     const std::string& pruned_failure, double tolerance);

nlohmann::json confirm_to_json(const ConfirmResult& result);

}  // namespace cuvil::tuner
