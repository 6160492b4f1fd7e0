#include "tuner/importance_report.h"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace cuvil::tuner {

void print_importance(const ImportanceReport& importance, const nlohmann::json& fanova,
                      const std::string& fanova_note) {
  std::printf("%-40s %10s %8s %21s %9s %8s\n", "parameter", "mean|SHAP|", "share", "p5..p95",
              "rank", "fANOVA");
  for (const ParamImportance& r : importance.ranking) {
    char interval[48], rank[24], fa[16] = "-";
    std::snprintf(interval, sizeof(interval), "%.4f..%.4f", r.low, r.high);
    std::snprintf(rank, sizeof(rank), "%d (%d..%d)", r.rank, r.rank_low, r.rank_high);
    if (fanova.is_object() && fanova.contains(r.name)) {
      std::snprintf(fa, sizeof(fa), "%.3f", fanova[r.name].get<double>());
    }
    std::printf("%-40s %10.4f %7.1f%% %21s %9s %8s\n", r.name.c_str(), r.mean_abs_shap,
                r.share * 100, interval, rank, fa);
  }
  if (!fanova_note.empty()) std::printf("fANOVA: %s\n", fanova_note.c_str());
}

ImportanceReliability importance_reliability(const ImportanceReport& importance,
                                             const Dataset& data, const nlohmann::json& fanova) {
  ImportanceReliability r;
  const size_t need = min_trials_for_importance(data.params.size());
  if (importance.trials < need) {
    r.enough_trials = false;
    r.message = std::to_string(importance.trials) + " complete trial(s) for " +
                std::to_string(data.params.size()) +
                " searched parameter(s): too few to rank them (need " + std::to_string(need) +
                "); read the ranks as noise";
  }
  if (fanova.is_object()) {
    std::vector<std::pair<std::string, double>> shap, fa;
    for (const ParamImportance& p : importance.ranking) {
      shap.emplace_back(p.name, p.mean_abs_shap);
      if (fanova.contains(p.name) && fanova[p.name].is_number()) {
        fa.emplace_back(p.name, fanova[p.name].get<double>());
      }
    }
    r.spearman = spearman_rank_correlation(shap, fa);
    if (std::isfinite(r.spearman)) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "SHAP vs fANOVA rank agreement: Spearman %.2f over %zu parameters%s",
                    r.spearman, fa.size(),
                    r.spearman < 0.5 ? " (they disagree: neither ranking is reliable)" : "");
      r.agreement = buf;
    }
  }
  return r;
}

nlohmann::json importance_json(const ImportanceReport& importance, const nlohmann::json& fanova) {
  nlohmann::json ranking = nlohmann::json::array();
  for (const ParamImportance& r : importance.ranking) {
    nlohmann::json row = {{"param", r.name},  {"mean_abs_shap", r.mean_abs_shap},
                          {"share", r.share}, {"p5_p95", {r.low, r.high}},
                          {"rank", r.rank},   {"rank_p5_p95", {r.rank_low, r.rank_high}}};
    if (fanova.is_object() && fanova.contains(r.name)) row["fanova"] = fanova[r.name];
    ranking.push_back(std::move(row));
  }
  nlohmann::json interactions = nlohmann::json::array();
  for (const Interaction& i : importance.interactions) {
    interactions.push_back({{"pair", {i.a, i.b}}, {"strength", i.strength}});
  }
  return {{"complete_trials", importance.trials},
          {"bootstrap_refits", importance.refits},
          {"ranking", ranking},
          {"interactions", interactions}};
}

}  // namespace cuvil::tuner
