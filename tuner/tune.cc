#include "tuner/tune.h"

#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "bench_suite/suites.h"
#include "probes/machine_peak.h"
#include "tuner/isolation.h"
#include "tuner/knob_reach.h"
#include "tuner/optuna_bridge.h"
#include "tuner/search_space.h"
#include "tuner/space_file.h"
#include "tuner/trial.h"
#include "tuner/trial_log.h"

namespace cuvil::tuner {

std::string default_study_name(const std::string& suite) {
  return "cuvil-" + suite;
}

std::string trial_log_path(const std::string& study, const std::string& study_name,
                           const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (study.find("://") == std::string::npos) return study + ".trials.jsonl";
  return study_name + ".trials.jsonl";
}

namespace {

// Trials that count toward --trials: finished ones, and those other tuners sharing the study
// are running now; interrupted ones are retried, so they do not count.
int counted_trials(const nlohmann::json& trials) {
  int n = 0;
  for (const auto& t : trials) {
    const std::string state = t.value("state", std::string());
    if (state == "complete" || state == "pruned" || state == "running") ++n;
    if (state == "fail") {
      const auto attrs = t.value("user_attrs", nlohmann::json::object());
      const std::string reason = attrs.value("fail_reason", std::string());
      if (reason.rfind("interrupted", 0) != 0) ++n;
    }
  }
  return n;
}

// The sampled values that differ from the baseline, so a trial's line stays short.
std::string short_values(const SearchSpace& space, const nlohmann::json& values) {
  const nlohmann::json defaults = default_values(space);
  std::string out;
  for (const Dimension* d : space.searched()) {
    auto it = values.find(d->name);
    if (it == values.end() || *it == defaults[d->name]) continue;
    out += (out.empty() ? "" : " ") + d->name + "=" + value_text(*it);
  }
  return out;
}

}  // namespace

int tune(const TuneOptions& o) {
  if (o.trials < 1) throw UserError("--trials must be at least 1");
  const bench::Workload workload = bench::resolve_workload(o.workload);
  const bench::Suite& suite = workload.suite;
  std::vector<bench::Rung> rungs = bench::select_rungs(workload.ladder, o.rungs);
  if (o.rungs.empty()) rungs.resize(1);  // default: the cheapest default rung
  o.measure.validate();
  const bool through_python = o.scenario == kPythonScenario;
  if (!through_python && o.scenario != kNativeScenario) {
    throw UserError("--scenario: unknown scenario '" + o.scenario + "' (known: native, python)");
  }
  PythonScenarioOptions python{o.python, o.python_callers, o.threads};
  std::string objective = kObjectiveName;
  if (through_python) {
    if (!suite.model_path.empty()) {
      throw UserError(
          "--scenario python: tunes the built-in suites (--suite) for now, not --model");
    }
    if (o.target != "cpu") throw UserError("--scenario python: the cpu target only");
    check_python_scenario(python);
    objective += ", through Python: " + std::to_string(o.python_callers) +
                 " caller thread(s) beside a pure-Python application thread";
  }

  SearchSpace space = space_from_registry(o.target);
  // Only calls from Python read the GIL's knobs: searched in that scenario alone.
  if (through_python) search_python_boundary(space);
  const std::string space_file =
      o.space_file.empty() ? default_space_file(bench::config_dir(), bench::config_name_of(suite))
                           : o.space_file;
  if (!space_file.empty()) load_space_file(space, space_file, bench::config_name_of(suite));
  const std::string study_name =
      o.study_name.empty() ? default_study_name(suite.name) : o.study_name;
  const std::string log_path = trial_log_path(o.study, study_name, o.trial_log);
  nlohmann::json machine = machine_fingerprint(o.threads);
  // The peaks this study's %peak figures divide by, kept with every trial: tune-gen's provenance
  // names these, not whatever the cache holds when it runs.
  const probes::MachinePeak peak = probes::machine_peak(o.threads);
  machine["peak_fp32_gflops"] = peak.fp32_gflops;
  machine["peak_mem_read_gbps"] = peak.mem_read_gbps;
  machine["peak_measured_at"] = peak.measured_at;
  machine["peak_provisional"] = peak.provisional;
  const std::string commit = source_commit();
  std::string rung_names;
  for (const auto& r : rungs) rung_names += (rung_names.empty() ? "" : ",") + r.name;

  // The study is keyed by the space as the user wrote it (as cuvil-tune-gen reads it back), not
  // by what reach leaves of it on this build.
  const std::string searched_space_hash = space_hash(space);
  // Knobs that shape no step of the tuned rungs only blur the study: left out, each named.
  leave_out_unreached(space, unreached_knobs(space, suite, rungs, o.threads));

  // Checked before the study: the baseline must itself be a valid configuration.
  const nlohmann::json baseline_values = default_values(space);
  config_from_values(space, baseline_values, suite.name);

  BridgeOptions bo;
  bo.python = o.python;
  OptunaBridge bridge(bo);
  StudyRequest req;
  req.storage = storage_url(o.study);
  req.study_name = study_name;
  req.sampler = o.sampler;
  req.pruner = o.pruner;
  req.seed = o.seed;
  req.space = space_to_json(space);
  req.attrs = {{"suite", suite.name},
               {"space_hash", searched_space_hash},
               {"rungs", rung_names},
               {"target", o.target},
               {"objective", objective}};
  if (through_python) req.attrs["scenario"] = o.scenario;
  req.allow_mismatch = o.allow_mismatch;
  req.enqueue = {baseline_values};
  const nlohmann::json opened = bridge.open(req);

  auto base_record = [&](int number) {
    TrialRecord r;
    r.number = number;
    r.study = study_name;
    r.suite = suite.name;
    r.sampler = o.sampler;
    r.objective = objective;
    r.machine = machine;
    r.commit = commit;
    return r;
  };
  auto log_requeued = [&](const nlohmann::json& requeued) {
    for (const auto& q : requeued) {
      TrialRecord r = base_record(q.at("number").get<int>());
      r.state = "fail";
      r.reason = "interrupted (the tuning process died); its configuration is retried";
      r.values = q.value("values", nlohmann::json::object());
      r.baseline = q.value("baseline", false);
      r.finished = utc_now();
      append_trial(log_path, r);
      std::printf("trial %d was left running by a killed process: marked failed, retried\n",
                  r.number);
    }
  };
  // Trials a killed process had measured and recorded in the study but not told: the bridge
  // finished them as recorded; the log gets the record it missed.
  auto log_recovered = [&](const nlohmann::json& recovered) {
    for (const auto& j : recovered) {
      const TrialRecord r = record_from_json(j);
      append_trial(log_path, r);
      std::printf("trial %d was measured by a killed process: recorded as %s from the study\n",
                  r.number, r.state.c_str());
    }
  };
  log_requeued(opened.value("requeued", nlohmann::json::array()));
  log_recovered(opened.value("recovered", nlohmann::json::array()));

  int finished = counted_trials(bridge.trials());
  std::printf(
      "tune %s on %s: study '%s' (%s), sampler %s, pruner %s, Optuna %s; %zu searched "
      "dimension(s); %d of %d trial(s) done; log %s\n",
      suite.name.c_str(), rung_names.c_str(), study_name.c_str(), req.storage.c_str(),
      o.sampler.c_str(), o.pruner.c_str(), bridge.optuna_version().c_str(), space.searched().size(),
      finished, o.trials, log_path.c_str());
  std::printf("objective: %s\n", objective.c_str());
  std::fflush(stdout);

  int completed = 0;
  double best = INFINITY;
  // Counted again before each trial: other tuners may be working on the same study.
  for (; finished < o.trials; finished = counted_trials(bridge.trials())) {
    const AskedTrial asked = bridge.ask();
    log_requeued(asked.requeued);
    log_recovered(asked.recovered);
    test_kill_point("asked", asked.number);
    TrialRecord record = base_record(asked.number);
    record.values = asked.values;
    record.baseline = asked.baseline;
    record.retry_of = asked.retry_of;
    record.started = utc_now();
    TrialSpec spec;
    spec.suite = suite;
    spec.rungs = rungs;
    spec.threads = o.threads;
    spec.measure = o.measure;
    spec.verify = o.verify;
    spec.through_python = through_python;
    spec.python = python;
    spec.fault = test_fault_for(asked.number);
    std::string failure;
    try {
      spec.config = config_from_values(space, asked.values, suite.name);
      record.config_hash = passes::config_hash(spec.config);
    } catch (const UserError& e) {
      failure = std::string("invalid configuration: ") + e.what();
    }
    bool pruned = false;
    double value = 0;
    std::string prune_reason;
    if (failure.empty()) {
      const ProgressHandler on_progress = [&](const nlohmann::json& p) {
        test_kill_point("trial", asked.number);  // the child is running
        if (p.contains("verified_kernels")) {    // the gate's report, before any rung
          record.verified_kernels = p["verified_kernels"];
          record.pinned = p.value("pinned", int64_t{0});
          return true;
        }
        RungSamples r;
        r.name = p.at("rung").get<std::string>();
        r.samples_ns = p.at("samples_ns").get<std::vector<double>>();
        r.median_ms = p.at("median_ms").get<double>();
        r.gil_free = p.value("gil_free", -1.0);
        r.noisy = p.value("noisy", false);
        const bool checkpoint = p.value("checkpoint", false);
        if (!checkpoint) record.rungs.push_back(r);
        const int step = p.at("step").get<int>();
        const double intermediate = p.at("intermediate").get<double>();
        const bool prune = bridge.report(asked.number, step, intermediate);
        // The last rung's end completes the trial: nothing left to save by stopping.
        if (!prune || step == rung_end_step(rungs.size() - 1)) return true;
        value = intermediate;
        if (checkpoint) {
          record.rungs.push_back(r);  // what was measured of the rung it stopped in
          prune_reason =
              "pruned at " + std::to_string(r.samples_ns.size()) + " samples of rung " + r.name;
        } else {
          prune_reason = "pruned after rung " + r.name;
        }
        return false;
      };
      ChildLimits limits{o.trial_timeout_s, o.trial_memory_mb};
      const ChildOutcome outcome = run_isolated([&](ChildChannel& ch) { run_trial(spec, ch); },
                                                on_progress, limits, bridge.fds());
      if (!outcome.ok) {
        failure = outcome.reason;
      } else if (outcome.stopped) {
        pruned = true;
      } else {
        value = outcome.result.at("value").get<double>();
      }
    }
    record.finished = utc_now();
    test_kill_point("measured", asked.number);
    // The whole record goes into the study with the state: the study is the record of the
    // tuning, the trial log a cache of it that a kill right after the tell may leave short.
    if (!failure.empty()) {
      record.state = "fail";
      record.reason = failure;
      bridge.tell_failed(asked.number, failure, to_json(record));
    } else if (pruned) {
      record.state = "pruned";
      record.reason = prune_reason;
      record.value = value;
      record.has_value = true;
      bridge.tell_pruned(asked.number, record.reason, to_json(record));
    } else {
      record.state = "complete";
      record.value = value;
      record.has_value = true;
      bridge.tell_complete(asked.number, value, to_json(record));
      ++completed;
      best = std::min(best, value);
    }
    test_kill_point("told", asked.number);
    append_trial(log_path, record);
    test_kill_point("logged", asked.number);
    if (!o.quiet) {
      // Through Python, how much of the GIL the calls left to the application thread.
      std::string gil, noisy = noisy_rungs(record);
      if (!noisy.empty()) noisy = "  NOISY: " + noisy;
      for (const RungSamples& r : record.rungs) {
        if (r.gil_free < 0) continue;
        char buf[48];
        std::snprintf(buf, sizeof buf, "%sGIL free %.0f%%", gil.empty() ? "  " : ", ",
                      r.gil_free * 100);
        gil += buf;
      }
      std::printf(
          "trial %3d %-8s %10s  %s%s%s%s%s\n", asked.number, record.state.c_str(),
          record.has_value ? (std::to_string(record.value).substr(0, 9) + " ms").c_str() : "-",
          asked.baseline ? "[baseline] " : "", short_values(space, asked.values).c_str(),
          gil.c_str(), noisy.c_str(),
          record.reason.empty() ? "" : ("  (" + record.reason + ")").c_str());
      std::fflush(stdout);
    }
  }
  const nlohmann::json all = bridge.trials();
  bool any_complete = false;
  for (const auto& t : all)
    any_complete = any_complete || t.value("state", std::string()) == "complete";
  if (!any_complete) {
    std::printf("tune: no trial completed\n");
    return 1;
  }
  const nlohmann::json b = bridge.best();
  std::printf("best: trial %d, %.4f ms (%d trial(s) completed in this run)\n",
              b.at("number").get<int>(), b.at("value").get<double>(), completed);
  return 0;
}

}  // namespace cuvil::tuner
