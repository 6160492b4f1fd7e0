// cuvil-tune-gen: ranks pass parameters by SHAP importance and writes the tuned .cuvilpass.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <new>
#include <thread>

#include "base/error.h"
#include "bench_suite/cli_conventions.h"
#include "bench_suite/workload_options.h"
#include "tuner/tune_gen.h"

int main(int argc, char** argv) {
  CLI::App app{
      "cuvil-tune-gen: read a tuning study's trial log, rank pass parameters by SHAP importance "
      "(XGBoost TreeSHAP, with Optuna's fANOVA beside it) and write the best configuration as a "
      ".cuvilpass file with its provenance"};
  app.option_defaults()->always_capture_default();
  cuvil::bench::add_version_flag(app, "cuvil-tune-gen");
  app.footer(
      "Examples:\n"
      "  cuvil-tune-gen --study tune.db --suite resnet50 -o resnet50.tuned.cuvilpass\n"
      "  cuvil-tune-gen --study tune.db --suite resnet50 -o tuned.cuvilpass --confirm "
      "--write-space pruned.yaml");
  cuvil::tuner::TuneGenOptions o;
  o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  app.add_option("--study", o.study, "Optuna storage the study lives in (SQLite file or URL)");
  app.add_option("--study-name", o.study_name, "study name (default cuvil-<suite>)");
  app.add_option("--trial-log", o.trial_log, "cuvil trial log (default <study>.trials.jsonl)");
  cuvil::bench::add_workload_options(app, o.workload);  // the study's --suite or --model
  app.add_option("-o,--out,--output", o.output,
                 "the .cuvilpass file to write; beside it (for OUT.cuvilpass) the pictures "
                 "OUT.importance.svg, OUT.history.svg, OUT.sensitivity.svg (with --sensitivity) "
                 "and the study report OUT.report.html")
      ->required();
  app.add_option("--importance-threshold", o.importance_threshold,
                 "reset parameters whose share of the total mean |SHAP| is below this (0..1) to "
                 "their defaults")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--write-space", o.space_output,
                 "also write the pruned search space (important parameters searched, the rest "
                 "fixed at the best values) for a second study: tune --space FILE");
  app.add_flag("--force", o.force,
               "--write-space even from fewer complete trials than a reliable ranking needs "
               "(2 per searched parameter, at least 20)");
  app.add_option("--space", o.space_file,
                 "the study's search-space YAML (default configs/search/<suite>.yaml, as tune)");
  app.add_flag("--confirm", o.confirm,
               "re-measure the default, the full best and the pruned best side by side in one "
               "process; keep the pruned one only within --confirm-tolerance of the full best");
  app.add_option("--confirm-tolerance", o.confirm_tolerance,
                 "largest slowdown of the pruned configuration against the full best that is "
                 "still kept (fraction: 0.02 = 2%)")
      ->capture_default_str();
  app.add_option("--confirm-rounds", o.confirm_rounds,
                 "interleaved rounds per configuration and rung for --confirm")
      ->capture_default_str();
  app.add_flag("--sensitivity", o.sensitivity,
               "one-at-a-time sweep: each parameter one step up and down (choices to each other "
               "value) around the written configuration, each measured side by side with it");
  app.add_option("--sensitivity-rounds", o.sensitivity_rounds,
                 "interleaved rounds per neighbour for --sensitivity")
      ->capture_default_str();
  app.add_option("--samples-per-round", o.samples_per_round,
                 "samples per configuration per round (--confirm, --sensitivity)")
      ->capture_default_str();
  app.add_option("--measure-timeout", o.measure_timeout_s,
                 "seconds one side-by-side measurement may take before its process is killed")
      ->capture_default_str();
  app.add_option("--measure-memory-mb", o.measure_memory_mb,
                 "address-space limit of a side-by-side measurement process in MiB (0: none)")
      ->capture_default_str();
  app.add_option("--json", o.json_output,
                 "also write importance, confirmation and sensitivity as JSON");
  app.add_option("--refits", o.refits, "bootstrap refits for the importance intervals")
      ->check(CLI::Range(0, 1000));
  app.add_option("--python", o.python, "Python interpreter with Optuna (for fANOVA)");
  app.add_option("--threads", o.threads, "threads for the verification run")
      ->check(CLI::Range(1, 1024));
  bool no_fanova = false, no_verify = false;
  app.add_flag("--no-fanova", no_fanova, "skip Optuna's fANOVA ranking");
  app.add_flag("--no-verify", no_verify, "do not verify the written file");
  cuvil::bench::tidy_defaults(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cuvil::bench::handle_parse_error(app, e, "cuvil-tune-gen");
  }
  o.fanova = !no_fanova;
  o.verify = !no_verify;
  try {
    return cuvil::tuner::tune_gen(o);
  } catch (const cuvil::UserError& e) {
    std::fprintf(stderr, "cuvil-tune-gen: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "cuvil-tune-gen: error: out of memory\n");
    return 3;
  } catch (const std::exception& e) {
    // Nothing expected it (EX_SOFTWARE, as cuvil-bench): a bug, but never an abort.
    std::fprintf(stderr, "cuvil-tune-gen: error: internal error: %s\n", e.what());
    return 70;
  }
}
