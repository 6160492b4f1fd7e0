// cuvil-tune-gen: from an Optuna study (its trials, read through the bridge, with the trial log
// as a cache reconciled with it; or a trial log alone) to a tuned .cuvilpass: the best
// configuration, optionally with unimportant parameters reset to their defaults, and a provenance
// block (machine, commit, date, suite, rungs, objective, speedup over the default with a bootstrap
// confidence interval, the importance table). The same input gives the same file: the date is the
// last trial's, every random choice is seeded (--confirm and
// --sensitivity measure, so with them it is not).
#pragma once

#include <string>
#include <vector>

#include "bench_suite/workload.h"
#include "passes/cuvilpass.h"
#include "tuner/importance.h"
#include "tuner/search_space.h"
#include "tuner/trial_log.h"

namespace cuvil::tuner {

struct TuneGenOptions {
  std::string study;       // SQLite file or RDB URL; the trial log defaults to <study>.trials.jsonl
  std::string study_name;  // default cuvil-<suite>
  std::string trial_log;
  bench::WorkloadSpec workload;  // the study's --suite, or --model with its bindings
  std::string output;
  std::string space_output;  // optional: the pruned search space for a second study
  std::string space_file;    // the study's space (default configs/search/<suite>.yaml)
  std::string json_output;   // optional: importance, confirmation and sensitivity as JSON
  std::string python = "/usr/bin/python3";
  double importance_threshold = 0;  // share of total mean |SHAP| below which a param is reset
  int refits = 20;
  bool fanova = true;
  bool force = false;  // --write-space even from too few trials to rank reliably
  bool verify = true;
  int threads = 1;       // for verification; measurements use the study's thread count
  bool confirm = false;  // re-measure default, full best and pruned best side by side
  double confirm_tolerance = 0.02;
  int confirm_rounds = 30;    // interleaved rounds (samples_per_round samples each)
  int samples_per_round = 1;  // 1: the finest interleaving against drifting load
  bool sensitivity = false;   // one-at-a-time sweep around the written configuration
  int sensitivity_rounds = 8;
  double measure_timeout_s = 1800;  // each side-by-side measurement's child process
  int64_t measure_memory_mb = 16384;
};

// The .cuvilpass for `values` (registry space, so every recorded value is used as recorded).
passes::PipelineConfig config_for_values(const nlohmann::json& values, const std::string& suite,
                                         const std::string& target);

int tune_gen(const TuneGenOptions& options);

}  // namespace cuvil::tuner
