// Which parameters matter: a gradient-boosted tree model (XGBoost, C API) fitted from the
// trials' parameters to log latency, explained with exact TreeSHAP (pred_contribs). Parameters
// are ranked by mean |SHAP value|; refits on bootstrap resamples of the trials give each
// parameter's 5th-95th percentile of importance and of rank (how stable the ranking is); SHAP
// interaction values (pred_interactions) give pairwise interaction strength between the top
// parameters.
//
// Encoding: booleans 0/1, numbers as they are (trees are invariant to monotone transforms, so
// log-scaled parameters need no transform), choices one-hot with one column per observed value;
// a parameter's SHAP value is the sum over its columns (SHAP values are additive). A parameter
// absent from a trial (its pass was off) is a missing value, which XGBoost routes natively.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tuner/trial_log.h"

namespace cuvil::tuner {

struct Dataset {
  std::vector<std::string> params;   // what is ranked
  std::vector<std::string> columns;  // encoded feature names
  std::vector<int> column_param;     // column -> index in params
  std::vector<float> x;              // rows x columns, row-major; NaN = missing
  std::vector<float> y;              // the target (log latency)
  size_t rows() const { return y.size(); }
};

// Complete trials only; y = log(objective). Parameters constant over every trial are left out.
Dataset encode_trials(const std::vector<TrialRecord>& trials);
// The dataset without these parameters (and their columns), e.g. knobs that reach no step.
Dataset drop_params(const Dataset& data, const std::set<std::string>& names);

struct ShapFit {
  std::vector<double> predictions;        // per row
  std::vector<double> bias;               // per row (the expected value)
  std::vector<std::vector<double>> shap;  // rows x params (columns summed per parameter)
};

struct GbtOptions {
  int rounds = 100;
  int max_depth = 3;
  double eta = 0.1;
  uint64_t seed = 0;
};

// Fits on `fit_rows` (indices into the dataset, repeats allowed) and explains every row.
ShapFit fit_and_explain(const Dataset& data, const std::vector<size_t>& fit_rows,
                        const GbtOptions& options);

struct ParamImportance {
  std::string name;
  // On log latency: 0.1 ~ moves latency by about 10%. The median over the bootstrap refits
  // (the fit on every trial when there are none), so low <= mean_abs_shap <= high.
  double mean_abs_shap = 0;
  double share = 0;                 // of the sum over parameters
  double low = 0, high = 0;         // 5th-95th percentile of mean |SHAP| over bootstrap refits
  int rank = 0;                     // 1 = most important, by mean_abs_shap
  int rank_low = 0, rank_high = 0;  // 5th-95th percentile of the refits' ranks, holding `rank`
};

// Fewer complete trials than this per searched parameter (and than kMinTrialsForImportance in
// all) rank unreliably: tune-gen warns loudly and --write-space refuses to freeze parameters
// without --force.
inline constexpr double kMinTrialsPerParam = 2.0;
inline constexpr size_t kMinTrialsForImportance = 20;
// The complete trials an importance ranking of `params` parameters needs.
size_t min_trials_for_importance(size_t params);

// Spearman's rank correlation of two rankings of the same names (average ranks for ties), over
// the names both have; NaN when fewer than three are shared.
double spearman_rank_correlation(const std::vector<std::pair<std::string, double>>& a,
                                 const std::vector<std::pair<std::string, double>>& b);

struct Interaction {
  std::string a, b;
  double strength = 0;  // mean |SHAP interaction value| of the pair (both halves)
};

struct ImportanceReport {
  std::vector<ParamImportance> ranking;   // most important first
  std::vector<Interaction> interactions;  // among the top parameters, strongest first
  size_t trials = 0;
  int refits = 0;
  std::string encoding = "bool 0/1, numbers as-is, choices one-hot (SHAP summed per parameter)";
};

ImportanceReport rank_importance(const Dataset& data, int refits = 20, int top = 5,
                                 const GbtOptions& options = {});

}  // namespace cuvil::tuner
