#include "tuner/study_trials.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "base/error.h"
#include "stats/blocks.h"
#include "stats/order_statistics.h"

namespace cuvil::tuner {

Speedup speedup_interval(const TrialRecord& baseline, const TrialRecord& best, int resamples,
                         uint64_t seed) {
  Speedup s;
  s.value = baseline.value / best.value;
  s.low = s.high = s.value;
  if (baseline.rungs.size() != best.rungs.size() || baseline.rungs.empty()) return s;
  std::mt19937_64 rng(seed);
  std::vector<double> ratios;
  auto resample_median = [&](const std::vector<double>& x) {
    std::vector<double> r;
    r.reserve(x.size());
    const size_t blocks = stats::run_block_count(x.size());
    if (blocks == 0) {
      for (size_t i = 0; i < x.size(); ++i) r.push_back(x[rng() % x.size()]);
      return stats::median_of(r);
    }
    for (size_t i = 0; i < blocks; ++i) {
      const stats::BlockRange b = stats::block_range(x.size(), blocks, rng() % blocks);
      const auto begin = x.begin() + static_cast<std::ptrdiff_t>(b.begin);
      r.insert(r.end(), begin, begin + static_cast<std::ptrdiff_t>(b.size));
    }
    return stats::median_of(r);
  };
  for (int b = 0; b < resamples; ++b) {
    double log_ratio = 0;
    for (size_t i = 0; i < best.rungs.size(); ++i) {
      if (baseline.rungs[i].samples_ns.empty() || best.rungs[i].samples_ns.empty()) return s;
      log_ratio += std::log(resample_median(baseline.rungs[i].samples_ns) /
                            resample_median(best.rungs[i].samples_ns));
    }
    ratios.push_back(std::exp(log_ratio / static_cast<double>(best.rungs.size())));
  }
  std::sort(ratios.begin(), ratios.end());
  s.low = stats::nearest_rank_percentile(ratios, 2.5);  // as stats::bootstrap_median_ci
  s.high = stats::nearest_rank_percentile(ratios, 97.5);
  return s;
}

const TrialRecord* best_trial(const std::vector<TrialRecord>& trials) {
  const TrialRecord* best = nullptr;
  for (const TrialRecord& t : trials) {
    if (t.state != "complete" || !t.has_value) continue;
    if (!best || t.value < best->value || (t.value == best->value && t.number < best->number)) {
      best = &t;
    }
  }
  return best;
}

const TrialRecord* baseline_trial(const std::vector<TrialRecord>& trials) {
  std::map<int, const TrialRecord*> by_number;
  for (const TrialRecord& t : trials) by_number[t.number] = &t;
  auto is_baseline = [&](const TrialRecord& t) {
    const TrialRecord* r = &t;
    for (size_t hops = 0; r && hops <= trials.size(); ++hops) {
      if (r->baseline) return true;
      auto it = by_number.find(r->retry_of);
      r = r->retry_of >= 0 && it != by_number.end() ? it->second : nullptr;
    }
    return false;
  };
  for (const TrialRecord& t : trials) {
    if (t.state == "complete" && t.has_value && is_baseline(t)) return &t;
  }
  return nullptr;
}

namespace {

std::string number_list(const std::vector<int>& numbers) {
  std::string out;
  for (int n : numbers) out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out;
}

std::string ms_text(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g ms", v);
  return text;
}

bool same_value(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

}  // namespace

std::string Reconciliation::summary() const {
  std::string s = "reconciled with the study: " + std::to_string(recovered.size()) +
                  " COMPLETE trial" + (recovered.size() == 1 ? "" : "s") + " recovered from it";
  if (!recovered.empty()) {
    s +=
        std::string(" (trial") + (recovered.size() > 1 ? "s " : " ") + number_list(recovered) + ")";
  }
  s += ", " + std::to_string(orphans.size()) + " log entr" + (orphans.size() == 1 ? "y" : "ies") +
       " without a study trial";
  if (!orphans.empty()) {
    s += std::string(" (trial") + (orphans.size() > 1 ? "s " : " ") + number_list(orphans) +
         ", left out)";
  }
  if (!disagreements.empty()) {
    s += ", " + std::to_string(disagreements.size()) + " log entr" +
         (disagreements.size() == 1 ? "y" : "ies") + " disagreeing with it (the study is trusted)";
    for (const std::string& d : disagreements) s += "\n  " + d;
  }
  return s;
}

Reconciliation reconcile_with_study(const std::vector<TrialRecord>& log,
                                    const nlohmann::json& study_trials, const std::string& where) {
  std::map<int, std::vector<const TrialRecord*>> logged;
  for (const TrialRecord& t : log) logged[t.number].push_back(&t);
  Reconciliation out;
  std::set<int> finished;
  for (const nlohmann::json& st : study_trials) {
    const int number = st.at("number").get<int>();
    const std::string state = st.value("state", std::string());
    const std::string trial = where + ": trial " + std::to_string(number);
    auto lit = logged.find(number);
    if (state != "complete" && state != "pruned" && state != "fail") {
      if (lit != logged.end()) {
        out.disagreements.push_back("trial " + std::to_string(number) + ": the log says " +
                                    lit->second.back()->state + ", the study has it " + state +
                                    " (left out)");
        logged.erase(lit);
      }
      continue;
    }
    finished.insert(number);
    const nlohmann::json attrs = st.value("user_attrs", nlohmann::json::object());
    double study_value = 0;
    if (state == "complete") {
      const nlohmann::json v = st.contains("value") ? st["value"] : nlohmann::json(nullptr);
      if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > 0)) {
        throw UserError(trial + ": field 'value': " + v.dump() +
                        " is not a positive finite time in ms");
      }
      study_value = v.get<double>();
    }
    // The log's entry for this trial: the last one in the study's state.
    const TrialRecord* from_log = nullptr;
    if (lit != logged.end()) {
      for (const TrialRecord* r : lit->second) {
        if (r->state == state) from_log = r;
      }
      if (!from_log) {
        out.disagreements.push_back("trial " + std::to_string(number) + ": the log says " +
                                    lit->second.back()->state + ", the study " + state);
      } else if (state == "complete" && !same_value(from_log->value, study_value)) {
        out.disagreements.push_back("trial " + std::to_string(number) + ": the log says " +
                                    ms_text(from_log->value) + ", the study " +
                                    ms_text(study_value));
        from_log = nullptr;
      }
    }
    TrialRecord r;
    if (from_log) {
      r = *from_log;
    } else if (attrs.contains("cuvil_record") && attrs["cuvil_record"].is_object()) {
      try {
        r = record_from_json(attrs["cuvil_record"]);
      } catch (const nlohmann::json::exception& e) {
        throw UserError(trial + ": user attribute cuvil_record: " + e.what());
      } catch (const UserError& e) {
        throw UserError(trial + ": user attribute cuvil_record: " + e.what());
      }
    } else {
      // A study from before tune stored its records: what the study itself knows.
      r.values = st.value("values", nlohmann::json::object());
      r.reason = attrs.value("fail_reason", std::string());
    }
    if (!from_log && state == "complete" && (lit == logged.end() || lit->second.empty())) {
      out.recovered.push_back(number);
    }
    r.number = number;
    r.state = state;
    if (state == "complete") {
      r.value = study_value;
      r.has_value = true;
    }
    if (attrs.value("baseline", false) == true) r.baseline = true;
    if (attrs.contains("retry_of") && attrs["retry_of"].is_number_integer()) {
      r.retry_of = attrs["retry_of"].get<int>();
    }
    out.trials.push_back(std::move(r));
  }
  for (const auto& [number, records] : logged) {
    if (!finished.count(number)) out.orphans.push_back(number);
  }
  std::sort(out.trials.begin(), out.trials.end(),
            [](const TrialRecord& a, const TrialRecord& b) { return a.number < b.number; });
  return out;
}

void require_study_file(const std::string& study) {
  std::string path;
  if (study.find("://") == std::string::npos) {
    path = study;
  } else if (study.rfind("sqlite:///", 0) == 0) {
    path = study.substr(std::string("sqlite:///").size());
  } else {
    return;  // another database: the bridge says whether the study is there
  }
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw UserError(path + ": no such study (cuvil-bench tune --study " + study + " makes one)");
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw UserError(path + ": not a study file (not a regular file)");
  }
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  in.read(header, sizeof(header));
  if (!in || std::memcmp(header, "SQLite format 3", 16) != 0) {
    throw UserError(path + ": not an Optuna study (not an SQLite database)");
  }
}

}  // namespace cuvil::tuner
