#include "tuner/tune_gen.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "bench_suite/suites.h"
#include "bench_suite/verify.h"
#include "passes/ir/error.h"
#include "probes/machine_peak.h"
#include "tuner/optuna_bridge.h"
#include "tuner/search_space.h"
#include "tuner/trial.h"
#include "tuner/tune.h"

namespace cuvil::tuner {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Four significant digits: provenance reads well and does not churn on float noise.
double round4(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", v);
  return std::strtod(text, nullptr);
}

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", v);
  return text;
}

}  // namespace

Speedup speedup_interval(const TrialRecord& baseline, const TrialRecord& best, int resamples,
                         uint64_t seed) {
  Speedup s;
  s.value = baseline.value / best.value;
  s.low = s.high = s.value;
  if (baseline.rungs.size() != best.rungs.size() || baseline.rungs.empty()) return s;
  std::mt19937_64 rng(seed);
  std::vector<double> ratios;
  auto resample_median = [&](const std::vector<double>& x) {
    std::vector<double> r(x.size());
    for (double& v : r) v = x[rng() % x.size()];
    return median(r);
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
  s.low = ratios[static_cast<size_t>(0.025 * (ratios.size() - 1))];
  s.high = ratios[static_cast<size_t>(0.975 * (ratios.size() - 1))];
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
  for (const TrialRecord& t : trials) {
    if (t.baseline && t.state == "complete" && t.has_value) return &t;
  }
  return nullptr;
}

passes::PipelineConfig config_for_values(const nlohmann::json& values, const std::string& suite,
                                         const std::string& target) {
  return config_from_values(space_from_registry(target), values, suite);
}

std::string pruned_space_yaml(const std::string& suite, const nlohmann::json& best_values,
                              const ImportanceReport& importance, double threshold) {
  std::set<std::string> important;
  for (const ParamImportance& p : importance.ranking) {
    if (p.share >= threshold) important.insert(p.name);
  }
  const SearchSpace space = space_from_registry("cpu");
  YAML::Emitter out;
  out << YAML::Comment("Pruned search space written by cuvil-tune-gen: parameters below " +
                       number_text(threshold * 100) +
                       "% of the total mean |SHAP| are fixed at the best trial's values.");
  out << YAML::BeginMap << YAML::Key << "suite" << YAML::Value << suite;
  out << YAML::Key << "passes" << YAML::Value << YAML::BeginMap;
  for (const std::string& pass : space.pass_order) {
    out << YAML::Key << pass << YAML::Value << YAML::BeginMap;
    const bool on = best_values.value(pass, true);
    if (!important.count(pass)) out << YAML::Key << "enabled" << YAML::Value << on;
    std::vector<const Dimension*> fixed;
    for (const Dimension& d : space.dims) {
      if (d.pass == pass && !d.is_switch() && !important.count(d.name) &&
          best_values.contains(d.name)) {
        fixed.push_back(&d);
      }
    }
    if (!fixed.empty()) {
      out << YAML::Key << "params" << YAML::Value << YAML::BeginMap;
      for (const Dimension* d : fixed) {
        const nlohmann::json& v = best_values[d->name];
        out << YAML::Key << d->param << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
            << "fixed" << YAML::Value << (v.is_string() ? v.get<std::string>() : v.dump())
            << YAML::EndMap;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

int tune_gen(const TuneGenOptions& o) {
  const bench::Suite& suite = bench::find_suite(o.suite);
  const std::string study_name =
      o.study_name.empty() ? default_study_name(suite.name) : o.study_name;
  if (o.study.empty() && o.trial_log.empty()) throw UserError("give --study or --trial-log");
  const std::string log_path = trial_log_path(o.study, study_name, o.trial_log);
  std::vector<TrialRecord> all = read_trial_log(log_path);
  std::vector<TrialRecord> trials;
  for (TrialRecord& t : all) {
    if (t.suite == suite.name && (t.study.empty() || t.study == study_name)) trials.push_back(t);
  }
  if (trials.empty()) {
    throw UserError(log_path + ": no trials of study '" + study_name + "' for suite '" +
                    suite.name + "'");
  }
  const TrialRecord* best = best_trial(trials);
  if (!best) throw UserError(log_path + ": no trial completed; nothing to write");
  const TrialRecord* base = baseline_trial(trials);
  const std::string target = "cpu";

  const Dataset data = encode_trials(trials);
  const ImportanceReport importance = rank_importance(data, o.refits);

  nlohmann::json fanova = nullptr;
  std::string fanova_note;
  if (o.fanova && !o.study.empty()) {
    try {
      BridgeOptions bo;
      bo.python = o.python;
      OptunaBridge bridge(bo);
      StudyRequest req;
      req.storage = storage_url(o.study);
      req.study_name = study_name;
      req.readonly = true;
      bridge.open(req);
      fanova = bridge.fanova(0);
    } catch (const UserError& e) {
      fanova_note = std::string("unavailable: ") + e.what();
    }
  } else {
    fanova_note = "not computed (needs --study)";
  }

  // The best values, with unimportant parameters reset to their defaults when asked.
  nlohmann::json values = best->values;
  std::vector<std::string> reset;
  if (o.importance_threshold > 0) {
    const SearchSpace space = space_from_registry(target);
    for (const ParamImportance& p : importance.ranking) {
      const Dimension* d = space.find(p.name);
      if (p.share < o.importance_threshold && d && !d->is_switch() && values.contains(p.name) &&
          values[p.name] != value_to_json(d->default_value)) {
        values[p.name] = value_to_json(d->default_value);
        reset.push_back(p.name);
      }
    }
  }
  passes::PipelineConfig config = config_for_values(values, suite.name, target);

  std::map<std::string, int> counts;
  std::string last_finished;
  for (const TrialRecord& t : trials) {
    ++counts[t.state];
    last_finished = std::max(last_finished, t.finished);
  }
  std::string rung_names;
  for (const RungSamples& r : best->rungs) rung_names += (rung_names.empty() ? "" : ",") + r.name;

  YAML::Emitter p;
  p.SetDoublePrecision(4);
  p << YAML::BeginMap;
  p << YAML::Key << "generated_by" << YAML::Value << "cuvil-tune-gen";
  p << YAML::Key << "date" << YAML::Value << last_finished;
  p << YAML::Key << "suite" << YAML::Value << suite.name;
  p << YAML::Key << "rungs" << YAML::Value << rung_names;
  p << YAML::Key << "study" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
    << study_name << YAML::Key << "trial_log" << YAML::Value << log_path << YAML::Key << "sampler"
    << YAML::Value << best->sampler << YAML::Key << "trials" << YAML::Value << YAML::Flow
    << YAML::BeginMap;
  for (const auto& [state, n] : counts) p << YAML::Key << state << YAML::Value << n;
  p << YAML::EndMap << YAML::EndMap;
  p << YAML::Key << "objective" << YAML::Value << YAML::BeginMap << YAML::Key << "metric"
    << YAML::Value << (best->objective.empty() ? kObjectiveName : best->objective) << YAML::Key
    << "best_ms" << YAML::Value << round4(best->value) << YAML::Key << "best_trial" << YAML::Value
    << best->number;
  if (base) {
    const Speedup s = speedup_interval(*base, *best, 1000, 1);
    p << YAML::Key << "default_ms" << YAML::Value << round4(base->value) << YAML::Key
      << "default_trial" << YAML::Value << base->number << YAML::Key << "speedup" << YAML::Value
      << round4(s.value) << YAML::Key << "speedup_ci95" << YAML::Value << YAML::Flow
      << YAML::BeginSeq << round4(s.low) << round4(s.high) << YAML::EndSeq;
  } else {
    p << YAML::Key << "default_ms" << YAML::Value << "not measured (no baseline trial completed)";
  }
  p << YAML::EndMap;
  const int threads = best->machine.value("threads", o.threads);
  const probes::MachinePeak peak = probes::machine_peak(threads);
  p << YAML::Key << "machine" << YAML::Value << YAML::BeginMap << YAML::Key << "cpu_model"
    << YAML::Value << best->machine.value("cpu_model", std::string("unknown")) << YAML::Key
    << "logical_cores" << YAML::Value << best->machine.value("logical_cores", 0) << YAML::Key
    << "threads" << YAML::Value << threads << YAML::Key << "peak_fp32_gflops" << YAML::Value
    << round4(peak.fp32_gflops) << YAML::Key << "peak_mem_read_gbps" << YAML::Value
    << round4(peak.mem_read_gbps) << YAML::EndMap;
  p << YAML::Key << "commit" << YAML::Value << best->commit;
  p << YAML::Key << "importance" << YAML::Value << YAML::BeginMap;
  p << YAML::Key << "model" << YAML::Value
    << "XGBoost gradient-boosted trees on log latency, exact TreeSHAP";
  p << YAML::Key << "encoding" << YAML::Value << importance.encoding;
  p << YAML::Key << "complete_trials" << YAML::Value << importance.trials;
  p << YAML::Key << "bootstrap_refits" << YAML::Value << importance.refits;
  p << YAML::Key << "ranking" << YAML::Value << YAML::BeginSeq;
  for (const ParamImportance& r : importance.ranking) {
    p << YAML::Flow << YAML::BeginMap << YAML::Key << "param" << YAML::Value << r.name << YAML::Key
      << "mean_abs_shap" << YAML::Value << round4(r.mean_abs_shap) << YAML::Key << "share"
      << YAML::Value << round4(r.share) << YAML::Key << "p5_p95" << YAML::Value << YAML::Flow
      << YAML::BeginSeq << round4(r.low) << round4(r.high) << YAML::EndSeq << YAML::Key
      << "rank_p5_p95" << YAML::Value << YAML::Flow << YAML::BeginSeq << r.rank_low << r.rank_high
      << YAML::EndSeq;
    if (fanova.is_object() && fanova.contains(r.name)) {
      p << YAML::Key << "fanova" << YAML::Value << round4(fanova[r.name].get<double>());
    }
    p << YAML::EndMap;
  }
  p << YAML::EndSeq;
  p << YAML::Key << "interactions" << YAML::Value << YAML::BeginSeq;
  for (const Interaction& i : importance.interactions) {
    p << YAML::Flow << YAML::BeginMap << YAML::Key << "pair" << YAML::Value << YAML::Flow
      << YAML::BeginSeq << i.a << i.b << YAML::EndSeq << YAML::Key << "strength" << YAML::Value
      << round4(i.strength) << YAML::EndMap;
  }
  p << YAML::EndSeq;
  if (!fanova_note.empty()) p << YAML::Key << "fanova" << YAML::Value << fanova_note;
  p << YAML::EndMap;
  if (o.importance_threshold > 0) {
    p << YAML::Key << "reset_to_default" << YAML::Value << YAML::BeginMap << YAML::Key
      << "threshold_share" << YAML::Value << o.importance_threshold << YAML::Key << "params"
      << YAML::Value << YAML::Flow << reset << YAML::Key << "confirmed" << YAML::Value
      << "no (re-measure with cuvil-bench compare before trusting it)" << YAML::EndMap;
  }
  p << YAML::EndMap;
  config.provenance_yaml = p.c_str();
  passes::save_cuvilpass(config, o.output);

  // Print the importance table.
  std::printf("best: trial %d, %.4f ms", best->number, best->value);
  if (base) std::printf(" (default %.4f ms, %.3fx)", base->value, base->value / best->value);
  std::printf("; %zu complete trial(s)\n", importance.trials);
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
  std::printf("wrote %s\n", o.output.c_str());

  if (!o.space_output.empty()) {
    std::ofstream out(o.space_output);
    out << pruned_space_yaml(suite.name, best->values, importance,
                             o.importance_threshold > 0 ? o.importance_threshold : 0.05);
    if (!out.flush()) throw UserError(o.space_output + ": cannot write the pruned space");
    std::printf("wrote %s\n", o.space_output.c_str());
  }

  if (o.verify) {
    // The written file must load through the validator and compute the right answer.
    const passes::PipelineConfig reloaded = passes::load_cuvilpass(o.output);
    const bench::Rung rung = bench::select_rungs(bench::load_suite_ladder(suite),
                                                 rung_names.substr(0, rung_names.find(',')))
                                 .front();
    const bench::VerifyResult check =
        bench::verify_graph(suite.build(rung, /*tiny=*/true), reloaded, o.threads, 1, "tuned");
    if (!check.ok()) {
      std::printf("verify: the written configuration FAILED verification\n");
      return 1;
    }
    std::printf("verify: %s loads and matches the reference interpreter\n", o.output.c_str());
  }
  return 0;
}

}  // namespace cuvil::tuner
