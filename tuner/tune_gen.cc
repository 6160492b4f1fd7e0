#include "tuner/tune_gen.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

#include "base/error.h"
#include "bench_suite/suites.h"
#include "bench_suite/verify.h"
#include "passes/target_cpu.h"
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
#include "tuner/tuned_cuvilpass.h"

namespace cuvil::tuner {

passes::PipelineConfig config_for_values(const nlohmann::json& values, const std::string& suite,
                                         const std::string& target) {
  return config_from_values(space_from_registry(target), values, suite);
}

namespace {

void check_options(const TuneGenOptions& o) {
  if (!(o.confirm_tolerance >= 0 && o.confirm_tolerance < 1)) {
    throw UserError("--confirm-tolerance must be a fraction in [0, 1), e.g. 0.02 for 2%");
  }
  if (o.confirm_rounds < 1) throw UserError("--confirm-rounds must be at least 1");
  if (o.sensitivity_rounds < 1) throw UserError("--sensitivity-rounds must be at least 1");
  if (o.samples_per_round < 1) throw UserError("--samples-per-round must be at least 1");
  if (!(o.measure_timeout_s > 0)) throw UserError("--measure-timeout must be positive");
}

// The CPU the chosen trial's plan was compiled for (its machine record), written as the tuned
// file's target so that the file gives that plan on every host; none for trials from before
// the record named it.
std::optional<std::vector<std::string>> measured_cpu_features(const std::string& source,
                                                              const TrialRecord& best) {
  const auto it = best.machine.find("cpu_features");
  if (it == best.machine.end()) return std::nullopt;
  const std::string where =
      source + ": trial " + std::to_string(best.number) + ": machine.cpu_features";
  if (!it->is_array()) throw UserError(where + ": expected a list of CPU feature names");
  std::vector<std::string> features;
  for (const nlohmann::json& f : *it) {
    if (!f.is_string() || !passes::is_cpu_feature_name(f.get<std::string>())) {
      throw UserError(where + ": '" + f.dump() + "' is not one of " + passes::cpu_feature_names());
    }
    features.push_back(f.get<std::string>());
  }
  return features;
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

// The study and its trial log. `bridge` holds the study open (with --study) until the ranking is
// done; `attrs` are its user attributes, tune's record of how it was made.
struct Study {
  std::string name;
  std::string log_path;
  std::string source;               // what messages about its trials name: the study, or the log
  std::vector<TrialRecord> logged;  // the log's entries for this study and suite
  std::unique_ptr<OptunaBridge> bridge;
  nlohmann::json attrs = nlohmann::json::object();
};

// Names the study and reads its trial log: with --study a cache of the study (a missing one is an
// empty cache), with --trial-log alone the only record. A missing study is refused before anything
// is read or said.
Study find_study(const TuneGenOptions& o, const bench::Suite& suite) {
  Study study;
  study.name = o.study_name.empty() ? default_study_name(suite.name) : o.study_name;
  if (o.study.empty() && o.trial_log.empty()) throw UserError("give --study or --trial-log");
  if (!o.study.empty()) require_study_file(o.study);
  study.log_path = trial_log_path(o.study, study.name, o.trial_log);
  study.source = o.study.empty() ? study.log_path : o.study;
  if (o.study.empty() || std::filesystem::exists(study.log_path)) {
    for (TrialRecord& t : read_trial_log(study.log_path)) {
      if (t.suite == suite.name && (t.study.empty() || t.study == study.name)) {
        study.logged.push_back(std::move(t));
      }
    }
  } else {
    std::printf("no trial log at %s: every trial is read from the study\n", study.log_path.c_str());
  }
  return study;
}

// The study's space (as `tune` built it): its defaults, ranges and what it searched. `file` is
// empty for the registry's own.
struct StudySpace {
  SearchSpace space;
  std::string file;
};

StudySpace load_study_space(const TuneGenOptions& o, const bench::Suite& suite,
                            const std::string& target) {
  StudySpace s;
  s.space = space_from_registry(target);
  s.file = o.space_file.empty()
               ? default_space_file(bench::config_dir(), bench::config_name_of(suite))
               : o.space_file;
  if (!s.file.empty()) load_space_file(s.space, s.file, bench::config_name_of(suite));
  return s;
}

// Opens the study read-only (with --study) and refuses one made for another suite.
void open_study(const TuneGenOptions& o, const bench::Suite& suite, Study& study) {
  if (o.study.empty()) return;
  BridgeOptions bo;
  bo.python = o.python;
  study.bridge = std::make_unique<OptunaBridge>(bo);
  StudyRequest req;
  req.storage = storage_url(o.study);
  req.study_name = study.name;
  req.readonly = true;
  const nlohmann::json opened = study.bridge->open(req);
  study.attrs = opened.value("attrs", nlohmann::json::object());
  if (study.attrs.contains("suite") && study.attrs["suite"] != suite.name) {
    throw UserError("study '" + study.name + "' in " + o.study + " was made for suite " +
                    study.attrs["suite"].dump() + ", not '" + suite.name + "'");
  }
}

// The target the study was tuned for: tune records it as the study's user attribute `target`; a
// study from a cuvil before that was tuned for the cpu.
std::string study_target(const TuneGenOptions& o, const Study& study) {
  if (!study.attrs.contains("target")) return "cpu";
  const nlohmann::json& target = study.attrs["target"];
  const std::string field = o.study + ": study '" + study.name + "': user attribute 'target'";
  if (!target.is_string()) throw UserError(field + ": " + target.dump() + " is not a target name");
  try {
    passes::default_pipeline(target.get<std::string>());  // the one list of targets
  } catch (const UserError& e) {
    throw UserError(field + ": " + e.what());
  }
  return target.get<std::string>();
}

// A warning (said, and kept for the provenance) when the study was made with another space.
std::string space_mismatch_note(const Study& study, const StudySpace& space) {
  if (!study.attrs.contains("space_hash") || study.attrs["space_hash"] == space_hash(space.space)) {
    return "";
  }
  const std::string note = "the study was made with another search space than " +
                           (space.file.empty() ? std::string("the registry's") : space.file) +
                           " (pass the study's --space): ranges and defaults may differ";
  std::printf("warning: %s\n", note.c_str());
  return note;
}

// The study is the record: its trials, with the log reconciled against it; without a study, the
// log's.
struct TrialsRead {
  std::vector<TrialRecord> trials;
  std::optional<Reconciliation> reconciled;
};

TrialsRead read_trials(const TuneGenOptions& o, Study& study) {
  TrialsRead read;
  if (!study.bridge) {
    read.trials = std::move(study.logged);
    return read;
  }
  read.reconciled = reconcile_with_study(study.logged, study.bridge->trials(), o.study);
  std::printf("%s\n", read.reconciled->summary().c_str());
  std::fflush(stdout);
  read.trials = read.reconciled->trials;
  return read;
}

// The best and the baseline trial and the rungs they ran on.
struct Chosen {
  const TrialRecord* best = nullptr;
  const TrialRecord* base = nullptr;  // null when no baseline trial completed
  std::string rung_names;
  std::vector<bench::Rung> rungs;
};

// Checked, with the outputs' folders, before anything is fitted or measured: bad input fails fast.
Chosen choose_trials(const TuneGenOptions& o, const bench::Workload& workload, const Study& study,
                     const std::vector<TrialRecord>& trials) {
  if (trials.empty()) {
    throw UserError(study.source + ": no trials of study '" + study.name + "' for suite '" +
                    workload.suite.name + "'");
  }
  Chosen c;
  c.best = best_trial(trials);
  if (!c.best) throw UserError(study.source + ": no trial completed; nothing to write");
  c.base = baseline_trial(trials);
  for (const RungSamples& r : c.best->rungs) {
    c.rung_names += (c.rung_names.empty() ? "" : ",") + r.name;
  }
  c.rungs = bench::select_rungs(workload.ladder, c.rung_names);
  for (const std::string& path : {o.output, o.space_output, o.json_output}) {
    if (!path.empty()) require_writable(path);
  }
  return c;
}

struct Ranking {
  Dataset data;
  ImportanceReport importance;
  nlohmann::json fanova = nullptr;  // param -> importance, or null
  std::string fanova_note;          // why there is none
  ImportanceReliability reliability;
};

// SHAP importance over the parameters that reach a step of these rungs: any share SHAP gave the
// others is noise. fANOVA from the study beside it.
Ranking rank_parameters(const TuneGenOptions& o, const bench::Suite& suite,
                        const SearchSpace& space, const Chosen& chosen,
                        const std::vector<TrialRecord>& trials, OptunaBridge* bridge) {
  std::set<std::string> unreached;
  for (const auto& [name, reason] : unreached_knobs(space, suite, chosen.rungs, o.threads)) {
    std::printf("%s: not ranked, %s\n", name.c_str(), reason.c_str());
    unreached.insert(name);
  }
  Ranking r;
  r.data = drop_params(encode_trials(trials), unreached);
  r.importance = rank_importance(r.data, o.refits);
  if (o.fanova && bridge) {
    try {
      r.fanova = bridge->fanova(0);
    } catch (const UserError& e) {
      r.fanova_note = std::string("unavailable: ") + e.what();
    }
  } else {
    r.fanova_note = o.fanova ? "not computed (needs --study)" : "not computed (--no-fanova)";
  }
  r.reliability = importance_reliability(r.importance, r.data, r.fanova);
  return r;
}

// The pruned best: parameters below the importance threshold reset to their defaults.
struct Pruned {
  nlohmann::json values;
  std::vector<std::string> reset;  // the parameters reset
};

Pruned prune_unimportant(const TuneGenOptions& o, const SearchSpace& space,
                         const ImportanceReport& importance, const TrialRecord& best) {
  Pruned p;
  p.values = best.values;
  if (o.importance_threshold <= 0) return p;
  const nlohmann::json defaults = default_values(space);
  for (const ParamImportance& i : importance.ranking) {
    const Dimension* d = space.find(i.name);
    if (i.share < o.importance_threshold && d && !d->is_switch() && p.values.contains(i.name) &&
        p.values[i.name] != defaults[i.name]) {
      p.values[i.name] = defaults[i.name];
      p.reset.push_back(i.name);
    }
  }
  return p;
}

// The best trial and the ranking, with its warnings; before anything is measured or written,
// --write-space is refused on a ranking from too few trials (unless --force).
void report_ranking(const TuneGenOptions& o, const Chosen& c, const Ranking& r) {
  std::printf("best: trial %d, %.4f ms", c.best->number, c.best->value);
  if (c.base) {
    std::printf(" (default %.4f ms, %.3fx)", c.base->value, c.base->value / c.best->value);
  }
  std::printf("; %zu complete trial(s)\n", r.importance.trials);
  std::string noisy;
  for (const TrialRecord* t : {c.best, c.base}) {
    if (!t || noisy_rungs(*t).empty() || (t == c.base && c.base == c.best)) continue;
    noisy += (noisy.empty() ? "" : "; ") + std::string(t == c.best ? "the best" : "the default's") +
             " trial " + std::to_string(t->number) + " (" + noisy_rungs(*t) + ")";
  }
  if (!noisy.empty()) {
    print_loud_warning(noisy +
                       " measured NOISY: the machine drifted or the median was not known to "
                       "--max-noise, so the speed-up may not repeat; --confirm measures the two "
                       "side by side");
  }
  print_importance(r.importance, r.fanova, r.fanova_note);
  if (!r.reliability.enough_trials) print_loud_warning(r.reliability.message);
  if (!r.reliability.agreement.empty()) std::printf("%s\n", r.reliability.agreement.c_str());
  if (!o.space_output.empty() && !r.reliability.enough_trials && !o.force) {
    throw UserError("--write-space " + o.space_output + ": " + r.reliability.message +
                    "; freezing parameters on that is guesswork (--force writes it anyway)");
  }
  std::fflush(stdout);
}

SideBySideOptions side_by_side_options(const TuneGenOptions& o, const bench::Suite& suite,
                                       const Chosen& c) {
  SideBySideOptions side;
  side.suite = suite;
  side.rungs = c.rungs;
  side.threads = c.best->machine.value("threads", o.threads);
  side.rounds = o.confirm_rounds;
  side.samples_per_round = o.samples_per_round;
  side.timeout_s = o.measure_timeout_s;
  side.memory_mb = o.measure_memory_mb;
  return side;
}

// --confirm: the default, the full best and the pruned best measured side by side; it decides
// whether the pruned one is written.
ConfirmResult confirm_side_by_side(const TuneGenOptions& o, const SearchSpace& space,
                                   const std::string& suite, const std::string& target,
                                   const Chosen& c, const Pruned& pruned,
                                   const SideBySideOptions& side) {
  std::printf(
      "confirm: default, full best%s measured side by side on %s (%d rounds x %d "
      "samples, %d thread(s))...\n",
      pruned.reset.empty() ? "" : " and pruned best", c.rung_names.c_str(), side.rounds,
      side.samples_per_round, side.threads);
  std::fflush(stdout);
  const passes::PipelineConfig default_config =
      config_from_values(space, default_values(space), suite);
  ConfirmResult confirmed =
      confirm_pruned(default_config, config_for_values(c.best->values, suite, target),
                     config_for_values(pruned.values, suite, target), o.confirm_tolerance, side);
  const TimeRatio& r = confirmed.chosen_vs_default;
  std::printf(
      "confirm: %s\nconfirm: written configuration vs default: %.3fx faster (95%% CI "
      "%.3f..%.3f, Mann-Whitney p=%.2g)\n",
      confirmed.decision.c_str(), 1 / r.ratio, 1 / r.high, 1 / r.low, r.p_value);
  return confirmed;
}

// --sensitivity: each one-step neighbour of the written values measured side by side with them.
std::vector<SensitivityRow> sweep_neighbours(const TuneGenOptions& o, const SearchSpace& space,
                                             const nlohmann::json& values, bool write_pruned,
                                             const SideBySideOptions& side) {
  SideBySideOptions s = side;
  s.rounds = o.sensitivity_rounds;
  const size_t total = one_step_neighbours(space, values).size();
  std::printf(
      "sensitivity: %zu one-step neighbours of the %s configuration, each measured "
      "side by side with it (%d rounds x %d samples)\n",
      total, write_pruned ? "pruned" : "best", s.rounds, s.samples_per_round);
  std::fflush(stdout);
  std::vector<SensitivityRow> rows =
      sensitivity_sweep(space, values, s, [](const SensitivityRow& r, size_t i, size_t n) {
        std::printf("  [%zu/%zu] %s %s: %s\n", i + 1, n, r.neighbour.param.c_str(),
                    r.neighbour.move.c_str(),
                    r.failure.empty() ? (std::to_string(r.ratio.ratio).substr(0, 5) + "x").c_str()
                                      : r.failure.c_str());
        std::fflush(stdout);
      });
  std::printf("%s", format_sensitivity(rows).c_str());
  return rows;
}

// What tune-gen read and decided: the written file's provenance, the pictures and the JSON report
// say it.
struct Findings {
  std::string suite;
  std::string study_name, log_path;
  std::string space_file, space_note;
  const std::vector<TrialRecord>* trials = nullptr;
  const Reconciliation* reconciled = nullptr;  // null without a study
  const Chosen* chosen = nullptr;
  const Ranking* ranking = nullptr;
  const Pruned* pruned = nullptr;
  bool write_pruned = false;
  const nlohmann::json* values = nullptr;                    // the written configuration's
  const ConfirmResult* confirmed = nullptr;                  // null without --confirm
  const std::vector<SensitivityRow>* sensitivity = nullptr;  // null without --sensitivity
};

// The written configuration (`config`) with its provenance; verified afterwards (verify_written).
void write_cuvilpass(const TuneGenOptions& o, const Findings& f,
                     const passes::PipelineConfig& config) {
  TunedProvenance p;
  p.suite = f.suite;
  p.rungs = f.chosen->rung_names;
  p.study_name = f.study_name;
  p.trial_log = f.log_path;
  p.space_file = f.space_file;
  p.space_note = f.space_note;
  p.trials = f.trials;
  p.best = f.chosen->best;
  p.base = f.chosen->base;
  p.threads = o.threads;
  p.importance = &f.ranking->importance;
  p.fanova = f.ranking->fanova;
  p.fanova_note = f.ranking->fanova_note;
  p.importance_threshold = o.importance_threshold;
  p.reset = f.pruned->reset;
  p.write_pruned = f.write_pruned;
  p.confirmed = f.confirmed;
  p.sensitivity = f.sensitivity;
  p.sensitivity_rounds = o.sensitivity_rounds;
  p.samples_per_round = o.samples_per_round;
  write_tuned_cuvilpass(config, p, o.output);
  std::printf("wrote %s (%s configuration)\n", o.output.c_str(),
              f.write_pruned ? "pruned" : "full best");
}

// Beside the .cuvilpass: the importance, history and sensitivity pictures and the study report.
void write_pictures(const TuneGenOptions& o, const Findings& f) {
  TuneReport pictures;
  pictures.output = o.output;
  pictures.suite = f.suite;
  pictures.study = f.study_name;
  pictures.rungs = f.chosen->rung_names;
  pictures.objective =
      f.chosen->best->objective.empty() ? kObjectiveName : f.chosen->best->objective;
  pictures.trials = f.trials;
  pictures.best_trial = f.chosen->best->number;
  pictures.baseline_trial = f.chosen->base ? f.chosen->base->number : -1;
  pictures.importance = &f.ranking->importance;
  pictures.fanova = f.ranking->fanova;
  pictures.fanova_note = f.ranking->fanova_note;
  pictures.enough_trials = f.ranking->reliability.enough_trials;
  pictures.reliability = f.ranking->reliability.message;
  pictures.sensitivity = f.sensitivity;
  pictures.written = f.write_pruned ? "pruned" : "full best";
  for (const std::string& path : write_tune_report(pictures)) {
    std::printf("wrote %s\n", path.c_str());
  }
}

// --write-space: the rest fixed at the BEST trial's values, not the pruned ones: a reset
// parameter may still be part of why the best is best (SHAP on few trials ranks unreliably), and
// the second study searches around the best.
void write_pruned_space(const TuneGenOptions& o, const SearchSpace& space, const Findings& f) {
  write_text(o.space_output,
             pruned_space_yaml(f.suite, space, f.chosen->best->values, f.ranking->importance,
                               o.importance_threshold > 0 ? o.importance_threshold : 0.05),
             "the pruned space");
  std::printf("wrote %s\n", o.space_output.c_str());
}

// --json: importance, confirmation and sensitivity for scripts.
void write_json_report(const TuneGenOptions& o, const Findings& f) {
  const TrialRecord* best = f.chosen->best;
  const TrialRecord* base = f.chosen->base;
  const Ranking& ranking = *f.ranking;
  nlohmann::json j = {{"suite", f.suite},
                      {"study", f.study_name},
                      {"rungs", f.chosen->rung_names},
                      {"best_trial", best->number},
                      {"best_ms", best->value},
                      {"written", f.write_pruned ? "pruned" : "full"},
                      {"reset_to_default", f.pruned->reset},
                      {"values", *f.values},
                      {"importance", importance_json(ranking.importance, ranking.fanova)}};
  j["importance"]["enough_trials"] = ranking.reliability.enough_trials;
  j["importance"]["min_trials"] = min_trials_for_importance(ranking.data.params.size());
  j["importance"]["shap_fanova_spearman"] = std::isfinite(ranking.reliability.spearman)
                                                ? nlohmann::json(ranking.reliability.spearman)
                                                : nullptr;
  if (base) j["default_ms"] = base->value;
  if (base) j["default_trial"] = base->number;
  nlohmann::json read = nlohmann::json::array();
  for (const TrialRecord& t : *f.trials) {
    read.push_back({{"number", t.number},
                    {"state", t.state},
                    {"value", t.has_value ? nlohmann::json(t.value) : nlohmann::json(nullptr)},
                    {"baseline", t.baseline}});
  }
  j["trials_read"] = read;
  if (f.reconciled) {
    j["reconciled"] = {{"recovered", f.reconciled->recovered},
                       {"orphans", f.reconciled->orphans},
                       {"disagreements", f.reconciled->disagreements}};
  }
  if (f.confirmed) j["confirm"] = confirm_to_json(*f.confirmed);
  if (f.sensitivity) j["sensitivity"] = sensitivity_to_json(*f.sensitivity);
  write_text(o.json_output, j.dump(2) + "\n", "the JSON report");
  std::printf("wrote %s\n", o.json_output.c_str());
}

// The written file must load through the validator and compute the right answer: 1 when not.
int verify_written(const TuneGenOptions& o, const bench::Suite& suite, const bench::Rung& rung) {
  const passes::PipelineConfig reloaded = passes::load_cuvilpass(o.output);
  const bench::VerifyResult check =
      bench::verify_scaled_down(suite, rung, reloaded, o.threads, 1, "tuned");
  if (!check.ok()) {
    std::printf("verify: the written configuration FAILED verification\n");
    return 1;
  }
  std::printf("verify: %s loads and matches the reference interpreter\n", o.output.c_str());
  return 0;
}

}  // namespace

int tune_gen(const TuneGenOptions& o) {
  check_options(o);
  const bench::Workload workload = bench::resolve_workload(o.workload);
  const bench::Suite& suite = workload.suite;
  Study study = find_study(o, suite);
  open_study(o, suite, study);
  const std::string target = study_target(o, study);
  const StudySpace space = load_study_space(o, suite, target);
  const std::string space_note = space_mismatch_note(study, space);
  const TrialsRead read = read_trials(o, study);
  const Chosen chosen = choose_trials(o, workload, study, read.trials);
  // Read before anything is measured: a malformed record fails now.
  const std::optional<std::vector<std::string>> cpu_features =
      target == "cpu" ? measured_cpu_features(study.source, *chosen.best) : std::nullopt;
  const Ranking ranking =
      rank_parameters(o, suite, space.space, chosen, read.trials, study.bridge.get());
  study.bridge.reset();  // done with the study: measuring children must not hold its pipes
  const Pruned pruned = prune_unimportant(o, space.space, ranking.importance, *chosen.best);
  report_ranking(o, chosen, ranking);

  const SideBySideOptions side = side_by_side_options(o, suite, chosen);
  std::optional<ConfirmResult> confirmed;
  if (o.confirm) {
    confirmed = confirm_side_by_side(o, space.space, suite.name, target, chosen, pruned, side);
  }
  const bool write_pruned = confirmed ? confirmed->keep_pruned : !pruned.reset.empty();
  const nlohmann::json& values = write_pruned ? pruned.values : chosen.best->values;
  passes::PipelineConfig config = config_for_values(values, suite.name, target);
  config.cpu_features = cpu_features;
  std::optional<std::vector<SensitivityRow>> sensitivity;
  if (o.sensitivity) sensitivity = sweep_neighbours(o, space.space, values, write_pruned, side);

  const Findings f{.suite = suite.name,
                   .study_name = study.name,
                   .log_path = study.log_path,
                   .space_file = space.file,
                   .space_note = space_note,
                   .trials = &read.trials,
                   .reconciled = read.reconciled ? &*read.reconciled : nullptr,
                   .chosen = &chosen,
                   .ranking = &ranking,
                   .pruned = &pruned,
                   .write_pruned = write_pruned,
                   .values = &values,
                   .confirmed = confirmed ? &*confirmed : nullptr,
                   .sensitivity = sensitivity ? &*sensitivity : nullptr};
  write_cuvilpass(o, f, config);
  write_pictures(o, f);
  if (!o.space_output.empty()) write_pruned_space(o, space.space, f);
  if (!o.json_output.empty()) write_json_report(o, f);
  return o.verify ? verify_written(o, suite, chosen.rungs.front()) : 0;
}

}  // namespace cuvil::tuner
