// The tuned .cuvilpass cuvil-tune-gen writes: the configuration with its provenance block
// (machine, commit, date, suite, rungs, the study, the objective with the speedup over the default
// and its bootstrap interval, the importance table, and what --importance-threshold, --confirm and
// --sensitivity found), emitted with yaml-cpp. Numbers are kept to four significant digits, so
// the file reads well and does not churn on float noise.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "passes/cuvilpass.h"
#include "tuner/confirm.h"
#include "tuner/importance.h"
#include "tuner/sensitivity.h"
#include "tuner/study_trials.h"
#include "tuner/trial_log.h"

namespace cuvil::tuner {

// What the provenance records. Pointers are borrowed; the optional parts are null when absent.
struct TunedProvenance {
  std::string suite, rungs;
  std::string study_name, trial_log;
  std::string space_file;  // empty: the registry's space
  std::string space_note;  // a warning that the study was made with another space, or empty
  const std::vector<TrialRecord>* trials = nullptr;  // every trial read (counts, the date)
  const TrialRecord* best = nullptr;
  const TrialRecord* base = nullptr;  // null when no baseline trial completed
  int threads = 1;                    // the measurement's, when the best trial does not say
  const ImportanceReport* importance = nullptr;
  nlohmann::json fanova;            // param -> importance, or null
  std::string fanova_note;          // why there is none
  double importance_threshold = 0;  // 0: nothing was reset
  std::vector<std::string> reset;   // the parameters reset to their defaults
  bool write_pruned = false;
  const ConfirmResult* confirmed = nullptr;                  // null without --confirm
  const std::vector<SensitivityRow>* sensitivity = nullptr;  // null without --sensitivity
  int sensitivity_rounds = 0, samples_per_round = 0;
};

// The provenance mapping as YAML text.
std::string provenance_yaml(const TunedProvenance& provenance);

// `config` with the provenance, written to `path` through the .cuvilpass writer.
void write_tuned_cuvilpass(passes::PipelineConfig config, const TunedProvenance& provenance,
                           const std::string& path);

}  // namespace cuvil::tuner
