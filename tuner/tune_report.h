// cuvil-tune-gen's pictures, written beside its .cuvilpass output (docs/tuning.md § Pictures):
//   <stem>.importance.svg   each ranked parameter's share of importance: mean |SHAP| with its
//                           p5-p95 interval over the bootstrap refits, fANOVA's beside it
//   <stem>.history.svg      the objective of every trial in order with the best so far; pruned
//                           trials as rings at their last value, failed ones as crosses
//   <stem>.sensitivity.svg  with --sensitivity: each one-step neighbour's time over the written
//                           configuration's, with its 95% interval (above 1: slower)
//   <stem>.report.html      the study report: a summary and the pictures above, inline and linked
// The drawing is reports/pictures/plot.h's, in the dashboard's style.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/importance.h"
#include "tuner/sensitivity.h"
#include "tuner/trial_log.h"

namespace cuvil::tuner {

struct TuneReport {
  std::string output;  // the .cuvilpass: the pictures go beside it
  std::string suite, study, rungs;
  std::string objective;  // what a trial's value is
  const std::vector<TrialRecord>* trials = nullptr;
  int best_trial = -1, baseline_trial = -1;
  const ImportanceReport* importance = nullptr;
  nlohmann::json fanova;    // param -> importance, or null
  std::string fanova_note;  // why there is none
  bool enough_trials = true;
  std::string reliability;  // the warning when there are too few trials to rank
  const std::vector<SensitivityRow>* sensitivity = nullptr;  // null: --sensitivity did not run
  std::string written;                                       // "pruned" or "full best"
};

// The pictures' SVG elements (no prolog), for tests and the report.
std::string importance_svg(const TuneReport& report);
std::string history_svg(const TuneReport& report);
std::string sensitivity_svg(const TuneReport& report);
std::string study_report_html(const TuneReport& report);

// Writes every file above (the sensitivity picture only with rows); returns their paths.
std::vector<std::string> write_tune_report(const TuneReport& report);

}  // namespace cuvil::tuner
