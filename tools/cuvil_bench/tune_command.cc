// cuvil-bench tune: search the pipeline's pass parameters for a suite with Optuna (tuner/).
#include <memory>

#include "base/error.h"
#include "bench_suite/workload_options.h"
#include "tools/cuvil_bench/commands.h"
#include "tuner/tune.h"

namespace cuvil::bench::cli {

Action add_tune_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "search pass parameters with Optuna; each trial is verified, then measured in an isolated "
      "child process; the study resumes where it stopped");
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench tune --suite resnet50 --trials 20 --study tune.db\n"
      "  cuvil-bench tune --suite resnet50 --scenario python --python-callers 2 --study py.db\n"
      "  cuvil-tune-gen --study tune.db --suite resnet50 -o tuned.cuvilpass");
  auto o = std::make_shared<tuner::TuneOptions>();
  // Tuning compares many configurations: looser defaults than `run`, so a trial stays short.
  o->measure.min_samples = 3;
  o->measure.min_time_s = 0.2;
  o->measure.max_noise = 0.03;
  o->measure.timeout_s = 5;
  auto max_noise_pct = std::make_shared<double>(o->measure.max_noise * 100);
  auto threads = std::make_shared<int>(0);
  auto no_verify = std::make_shared<bool>(false);
  bench::add_workload_options(*cmd, o->workload);
  cmd->add_option("--trials", o->trials,
                  "finished trials the study should have (a rerun continues up to this count)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--study", o->study,
                  "Optuna storage: an SQLite file, or an RDB URL (postgresql://...)")
      ->capture_default_str();
  cmd->add_option("--study-name", o->study_name,
                  "study name in the storage (default cuvil-<suite>)");
  cmd->add_option("--space", o->space_file,
                  "search-space YAML narrowing the registry (default configs/search/<suite>.yaml)");
  cmd->add_option("--sampler", o->sampler, "tpe | cmaes | random | qmc")
      ->check(CLI::IsMember({"tpe", "cmaes", "random", "qmc"}))
      ->capture_default_str();
  cmd->add_option("--pruner", o->pruner, "median | successive-halving | none")
      ->check(CLI::IsMember({"median", "successive-halving", "none"}))
      ->capture_default_str();
  cmd->add_option("--rungs", o->rungs,
                  "rungs to tune on, cheapest first (default: the cheapest default rung)");
  cmd->add_option("--trial-timeout", o->trial_timeout_s, "seconds per trial before it is killed")
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--trial-memory-mb", o->trial_memory_mb,
                  "address-space limit of a trial process in MiB (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--python", o->python, "Python interpreter with Optuna")->capture_default_str();
  cmd->add_option("--seed", o->seed, "sampler seed")->capture_default_str();
  cmd->add_option("--threads", *threads, "worker threads per trial (0: every core)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--trial-log", o->trial_log,
                  "cuvil's JSON-lines trial log (default <study>.trials.jsonl)");
  cmd->add_flag("--allow-study-mismatch", o->allow_mismatch,
                "use a study made for another suite, space or rungs");
  cmd->add_flag("--no-verify", *no_verify, "skip the verification gate (not recommended)");
  cmd->add_flag("-q,--quiet", o->quiet, "no line per trial");
  cmd->add_option("--scenario", o->scenario,
                  "native: trials measured in-process; python: through the cuvil Python module, "
                  "--python-callers threads calling one model beside a pure-Python thread (also "
                  "searches python-binding.gil_check)")
      ->check(CLI::IsMember({"native", "python"}))
      ->capture_default_str();
  cmd->add_option("--python-callers", o->python_callers,
                  "--scenario python: Python threads calling the model at once (intra-op threads "
                  "split between them)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  bench::MeasureOptions& m = o->measure;
  cmd->add_option("--warmup", m.warmup_iterations, "warm-up runs per rung")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--warmup-time", m.warmup_time_s, "seconds of warm-up runs, at least")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--min-samples", m.min_samples, "timed runs per rung, at least")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--max-samples", m.max_samples, "timed runs per rung, at most")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--min-time", m.min_time_s, "seconds of timed runs per rung, at least")
      ->check(CLI::Range(0.0, 36000.0))
      ->capture_default_str();
  cmd->add_option("--max-noise", *max_noise_pct, "stop once the median is known to +- this %")
      ->check(CLI::Range(0.001, 99.0))
      ->capture_default_str();
  cmd->add_option("--timeout", m.timeout_s, "seconds of timed runs per rung, at most")
      ->check(CLI::Range(0.0, 360000.0))
      ->capture_default_str();
  return [o, max_noise_pct, threads, no_verify] {
    require_runnable_target(o->target);
    o->measure.max_noise = *max_noise_pct / 100.0;
    PipelineOptions p;
    p.threads = *threads;
    o->threads = resolved_threads(p);
    o->verify = !*no_verify;
    return tuner::tune(*o);
  };
}

}  // namespace cuvil::bench::cli
