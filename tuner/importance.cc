#include "tuner/importance.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "base/error.h"
#include "stats/order_statistics.h"

namespace cuvil::tuner {

namespace {

void xgb(int status, const char* what) {
  if (status != 0) throw UserError(std::string("XGBoost ") + what + ": " + XGBGetLastError());
}

// Owns the handles so an error in the middle frees them.
struct Handles {
  DMatrixHandle train = nullptr, all = nullptr;
  BoosterHandle booster = nullptr;
  ~Handles() {
    if (booster) XGBoosterFree(booster);
    if (train) XGDMatrixFree(train);
    if (all) XGDMatrixFree(all);
  }
};

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return stats::linear_quantile(v, q);
}

std::vector<double> mean_abs(const ShapFit& fit, size_t params) {
  std::vector<double> m(params, 0.0);
  for (const auto& row : fit.shap) {
    for (size_t p = 0; p < params; ++p) m[p] += std::fabs(row[p]);
  }
  for (double& v : m) v /= std::max<size_t>(1, fit.shap.size());
  return m;
}

std::vector<int> ranks_of(const std::vector<double>& importance) {
  std::vector<size_t> order(importance.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return importance[a] > importance[b]; });
  std::vector<int> rank(importance.size());
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = static_cast<int>(i) + 1;
  return rank;
}

void set_params(BoosterHandle b, const GbtOptions& o) {
  const std::pair<const char*, std::string> params[] = {
      {"booster", "gbtree"},
      {"objective", "reg:squarederror"},
      {"tree_method", "exact"},
      {"max_depth", std::to_string(o.max_depth)},
      {"eta", std::to_string(o.eta)},
      {"min_child_weight", "1"},
      {"nthread", "1"},  // deterministic
      {"seed", std::to_string(o.seed)},
      {"verbosity", "0"},
  };
  for (const auto& [k, v] : params) xgb(XGBoosterSetParam(b, k, v.c_str()), "SetParam");
}

// The gradient-boosted trees of every fit: `rows` x `cols` features with their labels, trained
// into h.train and h.booster.
void train_booster(Handles& h, const float* x, size_t rows, size_t cols, const float* labels,
                   const GbtOptions& options) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  xgb(XGDMatrixCreateFromMat(x, rows, cols, nan, &h.train), "DMatrix");
  xgb(XGDMatrixSetFloatInfo(h.train, "label", labels, rows), "labels");
  xgb(XGBoosterCreate(&h.train, 1, &h.booster), "BoosterCreate");
  set_params(h.booster, options);
  for (int i = 0; i < options.rounds; ++i) {
    xgb(XGBoosterUpdateOneIter(h.booster, i, h.train), "UpdateOneIter");
  }
}

}  // namespace

Dataset drop_params(const Dataset& data, const std::set<std::string>& names) {
  Dataset out;
  out.y = data.y;
  std::vector<int> new_index(data.params.size(), -1);
  for (size_t p = 0; p < data.params.size(); ++p) {
    if (names.count(data.params[p])) continue;
    new_index[p] = static_cast<int>(out.params.size());
    out.params.push_back(data.params[p]);
  }
  std::vector<size_t> kept;
  for (size_t c = 0; c < data.columns.size(); ++c) {
    const int p = new_index[static_cast<size_t>(data.column_param[c])];
    if (p < 0) continue;
    kept.push_back(c);
    out.columns.push_back(data.columns[c]);
    out.column_param.push_back(p);
  }
  const size_t cols = data.columns.size();
  for (size_t r = 0; r < data.rows(); ++r) {
    for (size_t c : kept) out.x.push_back(data.x[r * cols + c]);
  }
  return out;
}

Dataset encode_trials(const std::vector<TrialRecord>& trials) {
  std::vector<const TrialRecord*> rows;
  for (const TrialRecord& t : trials) {
    if (t.state == "complete" && t.has_value && t.value > 0) rows.push_back(&t);
  }
  // Every parameter seen, with its kind and the distinct values it took.
  std::map<std::string, std::set<std::string>> seen;  // name -> distinct dumps (incl. "missing")
  std::map<std::string, char> kind;                   // 'b' bool, 'n' number, 's' string
  for (const TrialRecord* t : rows) {
    for (auto it = t->values.begin(); it != t->values.end(); ++it) {
      const char k = it->is_boolean() ? 'b' : it->is_number() ? 'n' : 's';
      auto [pos, fresh] = kind.emplace(it.key(), k);
      if (!fresh && pos->second != k) {
        throw UserError("parameter '" + it.key() + "' changes type between trials");
      }
    }
  }
  for (const auto& [name, k] : kind) {
    for (const TrialRecord* t : rows) {
      auto it = t->values.find(name);
      seen[name].insert(it == t->values.end() ? std::string("<missing>") : it->dump());
    }
  }
  Dataset d;
  for (const auto& [name, k] : kind) {
    if (seen[name].size() < 2) continue;  // fixed: nothing to learn
    const int p = static_cast<int>(d.params.size());
    d.params.push_back(name);
    if (k == 's') {
      for (const std::string& v : seen[name]) {
        if (v == "<missing>") continue;
        d.columns.push_back(name + "=" + nlohmann::json::parse(v).get<std::string>());
        d.column_param.push_back(p);
      }
    } else {
      d.columns.push_back(name);
      d.column_param.push_back(p);
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const TrialRecord* t : rows) {
    for (size_t c = 0; c < d.columns.size(); ++c) {
      const std::string& name = d.params[static_cast<size_t>(d.column_param[c])];
      auto it = t->values.find(name);
      if (it == t->values.end()) {
        d.x.push_back(nan);
      } else if (it->is_boolean()) {
        d.x.push_back(it->get<bool>() ? 1.0f : 0.0f);
      } else if (it->is_number()) {
        d.x.push_back(it->get<float>());
      } else {
        d.x.push_back(d.columns[c] == name + "=" + it->get<std::string>() ? 1.0f : 0.0f);
      }
    }
    d.y.push_back(static_cast<float>(std::log(t->value)));
  }
  return d;
}

ShapFit fit_and_explain(const Dataset& data, const std::vector<size_t>& fit_rows,
                        const GbtOptions& options) {
  const size_t cols = data.columns.size();
  const size_t params = data.params.size();
  CUVIL_CHECK(data.x.size() == data.rows() * cols, "dataset shape");
  if (data.rows() == 0 || cols == 0 || fit_rows.empty()) {
    ShapFit empty;
    empty.shap.assign(data.rows(), std::vector<double>(params, 0.0));
    return empty;
  }
  std::vector<float> fx, fy;
  for (size_t r : fit_rows) {
    fx.insert(fx.end(), data.x.begin() + static_cast<std::ptrdiff_t>(r * cols),
              data.x.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols));
    fy.push_back(data.y[r]);
  }
  Handles h;
  train_booster(h, fx.data(), fit_rows.size(), cols, fy.data(), options);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  xgb(XGDMatrixCreateFromMat(data.x.data(), data.rows(), cols, nan, &h.all), "DMatrix");
  bst_ulong len = 0;
  const float* out = nullptr;
  xgb(XGBoosterPredict(h.booster, h.all, /*option_mask=*/4, 0, 0, &len, &out), "pred_contribs");
  CUVIL_CHECK(len == data.rows() * (cols + 1), "pred_contribs size");
  ShapFit fit;
  for (size_t r = 0; r < data.rows(); ++r) {
    std::vector<double> per_param(params, 0.0);
    double sum = 0;
    for (size_t c = 0; c < cols; ++c) {
      const double v = out[r * (cols + 1) + c];
      per_param[static_cast<size_t>(data.column_param[c])] += v;
      sum += v;
    }
    const double bias = out[r * (cols + 1) + cols];
    fit.shap.push_back(std::move(per_param));
    fit.bias.push_back(bias);
    fit.predictions.push_back(sum + bias);
  }
  return fit;
}

size_t min_trials_for_importance(size_t params) {
  return std::max(kMinTrialsForImportance,
                  static_cast<size_t>(std::ceil(kMinTrialsPerParam * static_cast<double>(params))));
}

namespace {

// Average ranks (1-based) of `values`, ties sharing the mean of their positions.
std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return values[i] < values[j]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double mean = (static_cast<double>(i + j) / 2.0) + 1.0;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = mean;
    i = j + 1;
  }
  return ranks;
}

}  // namespace

double spearman_rank_correlation(const std::vector<std::pair<std::string, double>>& a,
                                 const std::vector<std::pair<std::string, double>>& b) {
  std::vector<double> x, y;
  for (const auto& [name, value] : a) {
    for (const auto& [other, value_b] : b) {
      if (other == name) {
        x.push_back(value);
        y.push_back(value_b);
      }
    }
  }
  if (x.size() < 3) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
  const double n = static_cast<double>(rx.size());
  const double mean = (n + 1) / 2;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx == 0 || syy == 0) return std::numeric_limits<double>::quiet_NaN();
  return sxy / std::sqrt(sxx * syy);
}

ImportanceReport rank_importance(const Dataset& data, int refits, int top,
                                 const GbtOptions& options) {
  ImportanceReport report;
  report.trials = data.rows();
  report.refits = refits;
  const size_t params = data.params.size();
  if (params == 0 || data.rows() < 2) return report;
  std::vector<size_t> all(data.rows());
  std::iota(all.begin(), all.end(), 0);
  const std::vector<double> importance = mean_abs(fit_and_explain(data, all, options), params);

  std::vector<std::vector<double>> boot_imp(params), boot_rank(params);
  std::mt19937_64 rng(options.seed + 0x5eed);
  for (int b = 0; b < refits; ++b) {
    std::vector<size_t> sample(data.rows());
    for (size_t& s : sample) s = static_cast<size_t>(rng() % data.rows());
    GbtOptions o = options;
    o.seed = options.seed + static_cast<uint64_t>(b) + 1;
    const std::vector<double> imp = mean_abs(fit_and_explain(data, sample, o), params);
    const std::vector<int> rk = ranks_of(imp);
    for (size_t p = 0; p < params; ++p) {
      boot_imp[p].push_back(imp[p]);
      boot_rank[p].push_back(rk[p]);
    }
  }
  // Estimate and interval from the same bootstrap: the median of the refits' importances (so
  // the 5th-95th percentile interval always contains it), ranked by that median. Without refits
  // the one fit on every trial is both.
  std::vector<double> estimate(params);
  for (size_t p = 0; p < params; ++p) {
    estimate[p] = refits ? percentile(boot_imp[p], 0.5) : importance[p];
  }
  const std::vector<int> estimate_rank = ranks_of(estimate);
  const double total = std::accumulate(estimate.begin(), estimate.end(), 0.0);
  for (size_t p = 0; p < params; ++p) {
    ParamImportance pi;
    pi.name = data.params[p];
    pi.mean_abs_shap = estimate[p];
    pi.share = total > 0 ? estimate[p] / total : 0;
    pi.rank = estimate_rank[p];
    pi.low = refits ? percentile(boot_imp[p], 0.05) : estimate[p];
    pi.high = refits ? percentile(boot_imp[p], 0.95) : estimate[p];
    pi.rank_low = refits ? static_cast<int>(std::lround(percentile(boot_rank[p], 0.05))) : pi.rank;
    pi.rank_high = refits ? static_cast<int>(std::lround(percentile(boot_rank[p], 0.95))) : pi.rank;
    // The rank of the median importance can fall outside the refits' rank percentiles when
    // ranks are tied or bimodal: the interval is widened to hold it.
    pi.rank_low = std::min(pi.rank_low, pi.rank);
    pi.rank_high = std::max(pi.rank_high, pi.rank);
    report.ranking.push_back(pi);
  }
  std::stable_sort(
      report.ranking.begin(), report.ranking.end(),
      [](const ParamImportance& a, const ParamImportance& b) { return a.rank < b.rank; });

  // Pairwise SHAP interaction values among the top parameters (one more fit on every trial).
  const size_t cols = data.columns.size();
  Handles h;
  train_booster(h, data.x.data(), data.rows(), cols, data.y.data(), options);
  bst_ulong len = 0;
  const float* out = nullptr;
  xgb(XGBoosterPredict(h.booster, h.train, /*option_mask=*/16, 0, 0, &len, &out),
      "pred_interactions");
  const size_t width = cols + 1;
  CUVIL_CHECK(len == data.rows() * width * width, "pred_interactions size");
  const size_t n_top = std::min<size_t>(static_cast<size_t>(top), params);
  std::vector<size_t> top_params;
  for (size_t i = 0; i < n_top; ++i) {
    for (size_t p = 0; p < params; ++p) {
      if (data.params[p] == report.ranking[i].name) top_params.push_back(p);
    }
  }
  for (size_t i = 0; i < top_params.size(); ++i) {
    for (size_t j = i + 1; j < top_params.size(); ++j) {
      double strength = 0;
      for (size_t r = 0; r < data.rows(); ++r) {
        double pair = 0;
        for (size_t a = 0; a < cols; ++a) {
          for (size_t b = 0; b < cols; ++b) {
            const bool ab = static_cast<size_t>(data.column_param[a]) == top_params[i] &&
                            static_cast<size_t>(data.column_param[b]) == top_params[j];
            const bool ba = static_cast<size_t>(data.column_param[a]) == top_params[j] &&
                            static_cast<size_t>(data.column_param[b]) == top_params[i];
            if (ab || ba) pair += out[r * width * width + a * width + b];
          }
        }
        strength += std::fabs(pair);
      }
      report.interactions.push_back({data.params[top_params[i]], data.params[top_params[j]],
                                     strength / static_cast<double>(data.rows())});
    }
  }
  std::stable_sort(
      report.interactions.begin(), report.interactions.end(),
      [](const Interaction& a, const Interaction& b) { return a.strength > b.strength; });
  return report;
}

}  // namespace cuvil::tuner
