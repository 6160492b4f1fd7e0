// cuvil-tune-gen: ranks pass parameters by SHAP importance and writes the tuned .cuvilpass.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <new>
#include <thread>

#include "passes/ir/error.h"
#include "tuner/tune_gen.h"

int main(int argc, char** argv) {
  CLI::App app{
      "cuvil-tune-gen: read a tuning study's trial log, rank pass parameters by SHAP importance "
      "(XGBoost TreeSHAP, with Optuna's fANOVA beside it) and write the best configuration as a "
      ".cuvilpass file with its provenance"};
  cuvil::tuner::TuneGenOptions o;
  o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  app.add_option("--study", o.study, "Optuna storage the study lives in (SQLite file or URL)");
  app.add_option("--study-name", o.study_name, "study name (default cuvil-<suite>)");
  app.add_option("--trial-log", o.trial_log, "cuvil trial log (default <study>.trials.jsonl)");
  app.add_option("--suite", o.suite, "suite the study tuned")->required();
  app.add_option("-o,--output", o.output, "the .cuvilpass file to write")->required();
  app.add_option("--importance-threshold", o.importance_threshold,
                 "reset parameters whose share of the total mean |SHAP| is below this (0..1) to "
                 "their defaults")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--write-space", o.space_output,
                 "also write the pruned search space (important parameters searched, the rest "
                 "fixed at the best values) for a second study: tune --space FILE");
  app.add_option("--refits", o.refits, "bootstrap refits for the importance intervals")
      ->check(CLI::Range(0, 1000));
  app.add_option("--python", o.python, "Python interpreter with Optuna (for fANOVA)");
  app.add_option("--threads", o.threads, "threads for the verification run")
      ->check(CLI::Range(1, 1024));
  bool no_fanova = false, no_verify = false;
  app.add_flag("--no-fanova", no_fanova, "skip Optuna's fANOVA ranking");
  app.add_flag("--no-verify", no_verify, "do not verify the written file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
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
  }
}
