#include "tuner/confirm.h"

#include <cstdio>

#include "base/error.h"

namespace cuvil::tuner {

namespace {

std::string pct(double ratio) {
  char text[32];
  std::snprintf(text, sizeof(text), "%+.2f%%", (ratio - 1) * 100);
  return text;
}

nlohmann::json ratio_json(const TimeRatio& r) {
  return {{"time_ratio", r.ratio}, {"ci95", {r.low, r.high}}, {"p_value", r.p_value}};
}

// Speedup = 1 / time ratio; its interval's ends swap.
nlohmann::json speedup_json(const TimeRatio& r) {
  return {{"speedup", 1 / r.ratio}, {"ci95", {1 / r.high, 1 / r.low}}, {"p_value", r.p_value}};
}

nlohmann::json medians(const std::vector<RungSamples>& rungs) {
  nlohmann::json out = nlohmann::json::object();
  for (const RungSamples& r : rungs) out[r.name] = r.median_ms;
  return out;
}

}  // namespace

bool pruned_within_tolerance(const TimeRatio& pruned_vs_full, double tolerance) {
  return pruned_vs_full.ratio <= 1 + tolerance;
}

ConfirmResult decide(std::vector<RungSamples> default_rungs, std::vector<RungSamples> full_rungs,
                     std::vector<RungSamples> pruned_rungs, bool pruned_differs,
                     const std::string& pruned_failure, double tolerance) {
  if (!(tolerance >= 0)) throw UserError("--confirm-tolerance must be >= 0");
  ConfirmResult r;
  r.pruned_differs = pruned_differs;
  r.tolerance = tolerance;
  r.full_vs_default = time_ratio(default_rungs, full_rungs, 11);
  const std::string tol = pct(1 + tolerance).substr(1);  // "2.00%"
  if (!pruned_differs) {
    r.keep_pruned = false;
    r.decision = "no parameter was below the importance threshold: the full best is written";
  } else if (!pruned_failure.empty()) {
    r.keep_pruned = false;
    r.decision =
        "the pruned configuration failed (" + pruned_failure + "): the full best is written";
  } else {
    r.pruned_vs_full = time_ratio(full_rungs, pruned_rungs, 12);
    r.keep_pruned = pruned_within_tolerance(r.pruned_vs_full, tolerance);
    r.decision = "the pruned configuration measured " + pct(r.pruned_vs_full.ratio) +
                 " against the full best (tolerance " + tol + "): the " +
                 (r.keep_pruned ? "pruned" : "full best") + " configuration is written";
  }
  r.chosen_vs_default =
      r.keep_pruned ? time_ratio(default_rungs, pruned_rungs, 13) : r.full_vs_default;
  r.default_rungs = std::move(default_rungs);
  r.full_rungs = std::move(full_rungs);
  r.pruned_rungs = std::move(pruned_rungs);
  return r;
}

ConfirmResult confirm_pruned(const passes::PipelineConfig& default_config,
                             const passes::PipelineConfig& full_best,
                             const passes::PipelineConfig& pruned, double tolerance,
                             const SideBySideOptions& options) {
  if (!(tolerance >= 0)) throw UserError("--confirm-tolerance must be >= 0");
  const bool differs = passes::config_hash(pruned) != passes::config_hash(full_best);
  std::vector<passes::PipelineConfig> configs = {default_config, full_best};
  if (differs) configs.push_back(pruned);
  const SideBySideResult m = measure_side_by_side_isolated(configs, options);
  if (!m.failure[0].empty()) {
    throw UserError("--confirm: the default configuration failed when re-measured: " +
                    m.failure[0]);
  }
  if (!m.failure[1].empty()) {
    throw UserError("--confirm: the best configuration failed when re-measured: " + m.failure[1]);
  }
  ConfirmResult r = decide(m.rungs[0], m.rungs[1], differs ? m.rungs[2] : m.rungs[1], differs,
                           differs ? m.failure[2] : "", tolerance);
  r.measured_with = options;
  return r;
}

nlohmann::json confirm_to_json(const ConfirmResult& r) {
  nlohmann::json j;
  j["method"] =
      "default, full best" + std::string(r.pruned_differs ? " and pruned best" : "") +
      " re-measured side by side in one process: " + std::to_string(r.measured_with.rounds) +
      " interleaved rounds of " + std::to_string(r.measured_with.samples_per_round) +
      " samples each per rung; ratio of medians (geometric mean over rungs), 95% bootstrap "
      "interval, two-sided Mann-Whitney U";
  j["tolerance"] = r.tolerance;
  j["written"] = r.keep_pruned ? "pruned" : "full";
  j["decision"] = r.decision;
  j["median_ms"] = {{"default", medians(r.default_rungs)}, {"full", medians(r.full_rungs)}};
  if (r.pruned_differs && !r.pruned_rungs.empty()) {
    j["median_ms"]["pruned"] = medians(r.pruned_rungs);
    j["pruned_vs_full"] = ratio_json(r.pruned_vs_full);
  }
  j["full_over_default"] = speedup_json(r.full_vs_default);
  j["written_over_default"] = speedup_json(r.chosen_vs_default);
  return j;
}

}  // namespace cuvil::tuner
