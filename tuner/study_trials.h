// The trials of a study as cuvil-tune-gen reads them: the study file checked before anything is
// read, the trial log reconciled with the study (the study is trusted), the best and the baseline
// trial, and the speedup of one trial over another with a bootstrap interval.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/trial_log.h"

namespace cuvil::tuner {

struct Speedup {
  double value = 0;          // baseline objective / best objective
  double low = 0, high = 0;  // 95% bootstrap interval
};

// Bootstrap over each rung's samples (medians of resamples, geometric mean over rungs). The
// samples of a rung share the machine's state of their moment, so where there are enough
// (stats::run_block_count) the resample draws whole blocks of them in time order (a block
// bootstrap) and the interval widens by as much as the machine drifted during the trial. A drift
// between the two trials, measured apart, it cannot see: side_by_side.h measures that away.
Speedup speedup_interval(const TrialRecord& baseline, const TrialRecord& best, int resamples,
                         uint64_t seed);

// The best complete trial (lowest objective, then lowest number); nullptr when none.
const TrialRecord* best_trial(const std::vector<TrialRecord>& trials);
// The complete baseline trial: flagged, or the retry (retry_of, followed back) of a flagged one.
const TrialRecord* baseline_trial(const std::vector<TrialRecord>& trials);

// The study's trials (the bridge's "trials" reply) with the trial log as a cache: a finished trial
// is taken from the log when the log agrees with the study, else from the record the study keeps
// as its user attribute "cuvil_record" (tune stores it). The study is trusted: its state, value
// and baseline flag win, and log entries without a study trial are left out. Unfinished trials
// (running, waiting) are left out. A complete trial whose value is not a positive finite time is
// a UserError naming `where` (the study), the trial and the field.
struct Reconciliation {
  std::vector<TrialRecord> trials;         // by number
  std::vector<int> recovered;              // complete in the study, missing from the log
  std::vector<int> orphans;                // log entries without a finished study trial
  std::vector<std::string> disagreements;  // "trial N: the log says ..., the study ..."
  std::string summary() const;             // "reconciled with the study: ..."
};
Reconciliation reconcile_with_study(const std::vector<TrialRecord>& log,
                                    const nlohmann::json& study_trials, const std::string& where);

// A study file must exist and be an SQLite database (a reader never creates one); URLs of other
// databases are left to the bridge. UserError otherwise.
void require_study_file(const std::string& study);

}  // namespace cuvil::tuner
