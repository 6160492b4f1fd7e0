// How cuvil-tune-gen tells the importance ranking: the table it prints, whether the ranking rests
// on enough trials and how far SHAP and fANOVA agree, and the ranking as JSON (--json).
#pragma once

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "tuner/importance.h"

namespace cuvil::tuner {

// The importance table on stdout, fANOVA's value beside SHAP's where there is one.
void print_importance(const ImportanceReport& importance, const nlohmann::json& fanova,
                      const std::string& fanova_note);

// Whether the ranking rests on enough trials, and how far SHAP and fANOVA agree.
struct ImportanceReliability {
  bool enough_trials = true;
  std::string message;    // when not enough
  std::string agreement;  // "SHAP and fANOVA ranks agree: Spearman 0.83 over 12 parameters"
  double spearman = std::numeric_limits<double>::quiet_NaN();
};

ImportanceReliability importance_reliability(const ImportanceReport& importance,
                                             const Dataset& data, const nlohmann::json& fanova);

nlohmann::json importance_json(const ImportanceReport& importance, const nlohmann::json& fanova);

}  // namespace cuvil::tuner
