#include "tuner/tune_gen.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>

#include "base/error.h"
#include "bench_suite/suites.h"
#include "bench_suite/verify.h"
#include "probes/machine_peak.h"
#include "stats/order_statistics.h"
#include "tuner/confirm.h"
#include "tuner/importance_report.h"
#include "tuner/knob_reach.h"
#include "tuner/optuna_bridge.h"
#include "tuner/pruned_space.h"
#include "tuner/search_space.h"
#include "tuner/sensitivity.h"
#include "tuner/side_by_side.h"
#include "tuner/space_file.h"
#include "tuner/study_trials.h"
#include "tuner/trial.h"
#include "tuner/tune.h"
#include "tuner/tune_report.h"

namespace cuvil::tuner {

namespace {

// Four significant digits: provenance reads well and does not churn on float noise.
double round4(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", v);
  return std::strtod(text, nullptr);
}

}  // namespace

passes::PipelineConfig config_for_values(const nlohmann::json& values, const std::string& suite,
                                         const std::string& target) {
  return config_from_values(space_from_registry(target), values, suite);
}

namespace {

bool scalar(const nlohmann::json& j) {
  return !j.is_object() && !j.is_array();
}

// Flat enough to print on one line: scalars and lists of scalars.
bool flat(const nlohmann::json& j) {
  for (const auto& v : j) {
    if (v.is_object()) return false;
    if (v.is_array()) {
      for (const auto& x : v) {
        if (!scalar(x)) return false;
      }
    }
  }
  return true;
}

// A JSON value in the provenance: numbers to four significant digits, flat maps and lists inline.
void emit_json(YAML::Emitter& p, const nlohmann::json& j) {
  if (j.is_object()) {
    if (flat(j)) p << YAML::Flow;
    p << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      p << YAML::Key << k << YAML::Value;
      emit_json(p, v);
    }
    p << YAML::EndMap;
  } else if (j.is_array()) {
    bool all_scalar = true;
    for (const auto& v : j) all_scalar = all_scalar && scalar(v);
    if (all_scalar) p << YAML::Flow;
    p << YAML::BeginSeq;
    for (const auto& v : j) emit_json(p, v);
    p << YAML::EndSeq;
  } else if (j.is_number_float()) {
    p << round4(j.get<double>());
  } else if (j.is_number_integer()) {
    p << j.get<int64_t>();
  } else if (j.is_boolean()) {
    p << j.get<bool>();
  } else if (j.is_string()) {
    p << j.get<std::string>();
  } else {
    p << YAML::Null;
  }
}

void check_options(const TuneGenOptions& o) {
  if (!(o.confirm_tolerance >= 0 && o.confirm_tolerance < 1)) {
    throw UserError("--confirm-tolerance must be a fraction in [0, 1), e.g. 0.02 for 2%");
  }
  if (o.confirm_rounds < 1) throw UserError("--confirm-rounds must be at least 1");
  if (o.sensitivity_rounds < 1) throw UserError("--sensitivity-rounds must be at least 1");
  if (o.samples_per_round < 1) throw UserError("--samples-per-round must be at least 1");
  if (!(o.measure_timeout_s > 0)) throw UserError("--measure-timeout must be positive");
}

void print_loud_warning(const std::string& text) {
  std::fprintf(stderr, "***WARNING*** %s\n", text.c_str());
}

// Checked before anything is measured, without creating the file.
void require_writable(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (access(dir.c_str(), W_OK) != 0) {
    throw UserError(path + ": cannot write there: " + dir + ": " + std::strerror(errno));
  }
}

void write_text(const std::string& path, const std::string& text, const std::string& what) {
  std::ofstream out(path);
  out << text;
  if (!out.flush()) throw UserError(path + ": cannot write " + what);
}

}  // namespace

int tune_gen(const TuneGenOptions& o) {
  check_options(o);
  const bench::Workload workload = bench::resolve_workload(o.workload);
  const bench::Suite& suite = workload.suite;
  const std::string study_name =
      o.study_name.empty() ? default_study_name(suite.name) : o.study_name;
  if (o.study.empty() && o.trial_log.empty()) throw UserError("give --study or --trial-log");
  if (!o.study.empty()) require_study_file(o.study);  // before anything is read or said
  const std::string log_path = trial_log_path(o.study, study_name, o.trial_log);
  std::vector<TrialRecord> logged;
  // With a study the log is only a cache of it: a missing one is an empty cache.
  if (o.study.empty() || std::filesystem::exists(log_path)) {
    for (TrialRecord& t : read_trial_log(log_path)) {
      if (t.suite == suite.name && (t.study.empty() || t.study == study_name)) {
        logged.push_back(std::move(t));
      }
    }
  } else {
    std::printf("no trial log at %s: every trial is read from the study\n", log_path.c_str());
  }
  const std::string target = "cpu";

  // The study's space (as `tune` built it): its defaults, ranges and what it searched.
  SearchSpace space = space_from_registry(target);
  const std::string space_file =
      o.space_file.empty() ? default_space_file(bench::config_dir(), bench::config_name_of(suite))
                           : o.space_file;
  if (!space_file.empty()) load_space_file(space, space_file, bench::config_name_of(suite));

  // The study is the record: its trials, with the log reconciled against it.
  std::unique_ptr<OptunaBridge> bridge;
  std::vector<TrialRecord> trials;
  std::optional<Reconciliation> reconciled;
  std::string space_note;
  if (!o.study.empty()) {
    BridgeOptions bo;
    bo.python = o.python;
    bridge = std::make_unique<OptunaBridge>(bo);
    StudyRequest req;
    req.storage = storage_url(o.study);
    req.study_name = study_name;
    req.readonly = true;
    const nlohmann::json opened = bridge->open(req);
    const nlohmann::json attrs = opened.value("attrs", nlohmann::json::object());
    if (attrs.contains("suite") && attrs["suite"] != suite.name) {
      throw UserError("study '" + study_name + "' in " + o.study + " was made for suite " +
                      attrs["suite"].dump() + ", not '" + suite.name + "'");
    }
    if (attrs.contains("space_hash") && attrs["space_hash"] != space_hash(space)) {
      space_note = "the study was made with another search space than " +
                   (space_file.empty() ? std::string("the registry's") : space_file) +
                   " (pass the study's --space): ranges and defaults may differ";
      std::printf("warning: %s\n", space_note.c_str());
    }
    reconciled = reconcile_with_study(logged, bridge->trials(), o.study);
    std::printf("%s\n", reconciled->summary().c_str());
    std::fflush(stdout);
    trials = reconciled->trials;
  } else {
    trials = std::move(logged);
  }
  const std::string source = o.study.empty() ? log_path : o.study;
  if (trials.empty()) {
    throw UserError(source + ": no trials of study '" + study_name + "' for suite '" + suite.name +
                    "'");
  }
  const TrialRecord* best = best_trial(trials);
  if (!best) throw UserError(source + ": no trial completed; nothing to write");
  const TrialRecord* base = baseline_trial(trials);
  std::string rung_names;
  for (const RungSamples& r : best->rungs) rung_names += (rung_names.empty() ? "" : ",") + r.name;
  // Checked before anything is fitted or measured: bad input fails fast.
  const std::vector<bench::Rung> rungs = bench::select_rungs(workload.ladder, rung_names);
  for (const std::string& path : {o.output, o.space_output, o.json_output}) {
    if (!path.empty()) require_writable(path);
  }

  // Knobs that reach no step of these rungs are not ranked: any share SHAP gave them is noise.
  std::set<std::string> unreached;
  for (const auto& [name, reason] : unreached_knobs(space, suite, rungs, o.threads)) {
    std::printf("%s: not ranked, %s\n", name.c_str(), reason.c_str());
    unreached.insert(name);
  }
  const Dataset data = drop_params(encode_trials(trials), unreached);
  const ImportanceReport importance = rank_importance(data, o.refits);

  nlohmann::json fanova = nullptr;
  std::string fanova_note;
  if (o.fanova && bridge) {
    try {
      fanova = bridge->fanova(0);
    } catch (const UserError& e) {
      fanova_note = std::string("unavailable: ") + e.what();
    }
  } else {
    fanova_note = o.fanova ? "not computed (needs --study)" : "not computed (--no-fanova)";
  }
  bridge.reset();  // done with the study: measuring children must not hold its pipes

  // The pruned best: parameters below the importance threshold reset to their defaults.
  nlohmann::json pruned_values = best->values;
  std::vector<std::string> reset;
  if (o.importance_threshold > 0) {
    const nlohmann::json defaults = default_values(space);
    for (const ParamImportance& p : importance.ranking) {
      const Dimension* d = space.find(p.name);
      if (p.share < o.importance_threshold && d && !d->is_switch() &&
          pruned_values.contains(p.name) && pruned_values[p.name] != defaults[p.name]) {
        pruned_values[p.name] = defaults[p.name];
        reset.push_back(p.name);
      }
    }
  }
  bool write_pruned = !reset.empty();

  std::printf("best: trial %d, %.4f ms", best->number, best->value);
  if (base) std::printf(" (default %.4f ms, %.3fx)", base->value, base->value / best->value);
  std::printf("; %zu complete trial(s)\n", importance.trials);
  print_importance(importance, fanova, fanova_note);
  const ImportanceReliability reliability = importance_reliability(importance, data, fanova);
  if (!reliability.enough_trials) print_loud_warning(reliability.message);
  if (!reliability.agreement.empty()) std::printf("%s\n", reliability.agreement.c_str());
  // Before anything is measured or written.
  if (!o.space_output.empty() && !reliability.enough_trials && !o.force) {
    throw UserError("--write-space " + o.space_output + ": " + reliability.message +
                    "; freezing parameters on that is guesswork (--force writes it anyway)");
  }
  std::fflush(stdout);

  SideBySideOptions side;
  side.suite = suite;
  side.rungs = rungs;
  side.threads = best->machine.value("threads", o.threads);
  side.rounds = o.confirm_rounds;
  side.samples_per_round = o.samples_per_round;
  side.timeout_s = o.measure_timeout_s;
  side.memory_mb = o.measure_memory_mb;

  std::optional<ConfirmResult> confirmed;
  if (o.confirm) {
    std::printf(
        "confirm: default, full best%s measured side by side on %s (%d rounds x %d "
        "samples, %d thread(s))...\n",
        reset.empty() ? "" : " and pruned best", rung_names.c_str(), side.rounds,
        side.samples_per_round, side.threads);
    std::fflush(stdout);
    const passes::PipelineConfig default_config =
        config_from_values(space, default_values(space), suite.name);
    confirmed = confirm_pruned(default_config, config_for_values(best->values, suite.name, target),
                               config_for_values(pruned_values, suite.name, target),
                               o.confirm_tolerance, side);
    write_pruned = confirmed->keep_pruned;
    const TimeRatio& c = confirmed->chosen_vs_default;
    std::printf(
        "confirm: %s\nconfirm: written configuration vs default: %.3fx faster (95%% CI "
        "%.3f..%.3f, Mann-Whitney p=%.2g)\n",
        confirmed->decision.c_str(), 1 / c.ratio, 1 / c.high, 1 / c.low, c.p_value);
  }
  const nlohmann::json& values = write_pruned ? pruned_values : best->values;
  passes::PipelineConfig config = config_for_values(values, suite.name, target);

  std::vector<SensitivityRow> sensitivity;
  if (o.sensitivity) {
    SideBySideOptions s = side;
    s.rounds = o.sensitivity_rounds;
    const size_t total = one_step_neighbours(space, values).size();
    std::printf(
        "sensitivity: %zu one-step neighbours of the %s configuration, each measured "
        "side by side with it (%d rounds x %d samples)\n",
        total, write_pruned ? "pruned" : "best", s.rounds, s.samples_per_round);
    std::fflush(stdout);
    sensitivity =
        sensitivity_sweep(space, values, s, [](const SensitivityRow& r, size_t i, size_t n) {
          std::printf("  [%zu/%zu] %s %s: %s\n", i + 1, n, r.neighbour.param.c_str(),
                      r.neighbour.move.c_str(),
                      r.failure.empty() ? (std::to_string(r.ratio.ratio).substr(0, 5) + "x").c_str()
                                        : r.failure.c_str());
          std::fflush(stdout);
        });
    std::printf("%s", format_sensitivity(sensitivity).c_str());
  }

  std::map<std::string, int> counts;
  std::string last_finished;
  for (const TrialRecord& t : trials) {
    ++counts[t.state];
    last_finished = std::max(last_finished, t.finished);
  }

  YAML::Emitter p;
  p.SetDoublePrecision(4);
  p << YAML::BeginMap;
  p << YAML::Key << "generated_by" << YAML::Value << "cuvil-tune-gen";
  p << YAML::Key << "date" << YAML::Value << last_finished;
  p << YAML::Key << "suite" << YAML::Value << suite.name;
  p << YAML::Key << "rungs" << YAML::Value << rung_names;
  p << YAML::Key << "study" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
    << study_name << YAML::Key << "trial_log" << YAML::Value << log_path << YAML::Key << "sampler"
    << YAML::Value << best->sampler << YAML::Key << "space" << YAML::Value
    << (space_file.empty() ? std::string("registry") : space_file) << YAML::Key << "trials"
    << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& [state, n] : counts) p << YAML::Key << state << YAML::Value << n;
  p << YAML::EndMap;
  if (!space_note.empty()) p << YAML::Key << "warning" << YAML::Value << space_note;
  p << YAML::EndMap;
  p << YAML::Key << "objective" << YAML::Value << YAML::BeginMap << YAML::Key << "metric"
    << YAML::Value << (best->objective.empty() ? kObjectiveName : best->objective) << YAML::Key
    << "best_ms" << YAML::Value << round4(best->value) << YAML::Key << "best_trial" << YAML::Value
    << best->number;
  if (base) {
    // From the study's own trials, measured apart (maybe under different load): --confirm
    // measures the two side by side.
    const Speedup s = speedup_interval(*base, *best, 1000, 1);
    p << YAML::Key << "default_ms" << YAML::Value << round4(base->value) << YAML::Key
      << "default_trial" << YAML::Value << base->number << YAML::Key << "speedup" << YAML::Value
      << round4(s.value) << YAML::Key << "speedup_ci95" << YAML::Value << YAML::Flow
      << YAML::BeginSeq << round4(s.low) << round4(s.high) << YAML::EndSeq;
  } else {
    p << YAML::Key << "default_ms" << YAML::Value << "not measured (no baseline trial completed)";
  }
  if (confirmed) {
    const TimeRatio& c = confirmed->chosen_vs_default;
    p << YAML::Key << "speedup_side_by_side" << YAML::Value << round4(1 / c.ratio) << YAML::Key
      << "speedup_side_by_side_ci95" << YAML::Value << YAML::Flow << YAML::BeginSeq
      << round4(1 / c.high) << round4(1 / c.low) << YAML::EndSeq;
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
      << YAML::Value << YAML::Flow << reset << YAML::Key << "written" << YAML::Value
      << (write_pruned ? "pruned" : "full best") << YAML::Key << "confirmed" << YAML::Value
      << (confirmed ? confirmed->decision
                    : std::string("no (re-measure with cuvil-tune-gen --confirm before trusting "
                                  "it)"))
      << YAML::EndMap;
  }
  if (confirmed) {
    p << YAML::Key << "confirm" << YAML::Value;
    emit_json(p, confirm_to_json(*confirmed));
  }
  if (o.sensitivity) {
    p << YAML::Key << "sensitivity" << YAML::Value << YAML::BeginMap << YAML::Key << "method"
      << YAML::Value
      << "one parameter moved one step (x2 or /2 on log and power-of-two scales, one step or one "
         "base multiple otherwise, each other choice, booleans flipped), the rest held; each "
         "neighbour measured side by side with the written configuration (" +
             std::to_string(o.sensitivity_rounds) + " rounds x " +
             std::to_string(o.samples_per_round) +
             " samples); time_ratio above 1: the move is slower"
      << YAML::Key << "rows" << YAML::Value;
    emit_json(p, sensitivity_to_json(sensitivity));
    p << YAML::EndMap;
  }
  p << YAML::EndMap;
  config.provenance_yaml = p.c_str();
  passes::save_cuvilpass(config, o.output);
  std::printf("wrote %s (%s configuration)\n", o.output.c_str(),
              write_pruned ? "pruned" : "full best");
  TuneReport pictures;
  pictures.output = o.output;
  pictures.suite = suite.name;
  pictures.study = study_name;
  pictures.rungs = rung_names;
  pictures.objective = best->objective.empty() ? kObjectiveName : best->objective;
  pictures.trials = &trials;
  pictures.best_trial = best->number;
  pictures.baseline_trial = base ? base->number : -1;
  pictures.importance = &importance;
  pictures.fanova = fanova;
  pictures.fanova_note = fanova_note;
  pictures.enough_trials = reliability.enough_trials;
  pictures.reliability = reliability.message;
  pictures.sensitivity = o.sensitivity ? &sensitivity : nullptr;
  pictures.written = write_pruned ? "pruned" : "full best";
  for (const std::string& path : write_tune_report(pictures)) {
    std::printf("wrote %s\n", path.c_str());
  }

  if (!o.space_output.empty()) {
    // The rest fixed at the BEST trial's values, not the pruned ones: a reset parameter may
    // still be part of why the best is best (SHAP on few trials ranks unreliably), and the second
    // study searches around the best.
    write_text(o.space_output,
               pruned_space_yaml(suite.name, space, best->values, importance,
                                 o.importance_threshold > 0 ? o.importance_threshold : 0.05),
               "the pruned space");
    std::printf("wrote %s\n", o.space_output.c_str());
  }
  if (!o.json_output.empty()) {
    nlohmann::json j = {{"suite", suite.name},
                        {"study", study_name},
                        {"rungs", rung_names},
                        {"best_trial", best->number},
                        {"best_ms", best->value},
                        {"written", write_pruned ? "pruned" : "full"},
                        {"reset_to_default", reset},
                        {"values", values},
                        {"importance", importance_json(importance, fanova)}};
    j["importance"]["enough_trials"] = reliability.enough_trials;
    j["importance"]["min_trials"] = min_trials_for_importance(data.params.size());
    j["importance"]["shap_fanova_spearman"] =
        std::isfinite(reliability.spearman) ? nlohmann::json(reliability.spearman) : nullptr;
    if (base) j["default_ms"] = base->value;
    if (base) j["default_trial"] = base->number;
    nlohmann::json read = nlohmann::json::array();
    for (const TrialRecord& t : trials) {
      read.push_back({{"number", t.number},
                      {"state", t.state},
                      {"value", t.has_value ? nlohmann::json(t.value) : nlohmann::json(nullptr)},
                      {"baseline", t.baseline}});
    }
    j["trials_read"] = read;
    if (reconciled) {
      j["reconciled"] = {{"recovered", reconciled->recovered},
                         {"orphans", reconciled->orphans},
                         {"disagreements", reconciled->disagreements}};
    }
    if (confirmed) j["confirm"] = confirm_to_json(*confirmed);
    if (o.sensitivity) j["sensitivity"] = sensitivity_to_json(sensitivity);
    write_text(o.json_output, j.dump(2) + "\n", "the JSON report");
    std::printf("wrote %s\n", o.json_output.c_str());
  }

  if (o.verify) {
    // The written file must load through the validator and compute the right answer.
    const passes::PipelineConfig reloaded = passes::load_cuvilpass(o.output);
    const bench::VerifyResult check =
        bench::verify_scaled_down(suite, rungs.front(), reloaded, o.threads, 1, "tuned");
    if (!check.ok()) {
      std::printf("verify: the written configuration FAILED verification\n");
      return 1;
    }
    std::printf("verify: %s loads and matches the reference interpreter\n", o.output.c_str());
  }
  return 0;
}

}  // namespace cuvil::tuner
