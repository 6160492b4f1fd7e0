// `cuvil-bench tune`: drives an Optuna study (ask and tell over the bridge) over the pipeline's
// search space, one isolated trial per configuration, and keeps cuvil's trial log.
#pragma once

#include <cstdint>
#include <string>

#include "bench_suite/measure.h"
#include "bench_suite/workload.h"
#include "tuner/python_scenario.h"

namespace cuvil::tuner {

struct TuneOptions {
  bench::WorkloadSpec workload;  // --suite, or --model with its bindings
  std::string target = "cpu";
  std::string rungs;               // ladder selection; default: the lightest default rung
  int trials = 60;                 // the study's total of finished trials to reach
  std::string study = "study.db";  // SQLite file or an Optuna RDB URL
  std::string study_name;          // default: cuvil-<suite>
  std::string space_file;          // default: configs/search/<suite>.yaml when present
  std::string sampler = "tpe";
  std::string pruner = "median";
  int seed = 0;
  double trial_timeout_s = 600;
  int64_t trial_memory_mb = 16384;
  std::string python = "/usr/bin/python3";
  int threads = 1;
  bench::MeasureOptions measure;
  std::string trial_log;  // default: <study>.trials.jsonl (or cuvil-<name>.trials.jsonl)
  bool allow_mismatch = false;
  bool verify = true;
  bool quiet = false;
  // native: each trial measured in-process (Executor); python: through the cuvil module with
  // Python threads calling it (python_scenario.h), which also searches python-binding.*.
  std::string scenario = kNativeScenario;
  int python_callers = 2;
};

// The trial log path the options imply.
std::string trial_log_path(const std::string& study, const std::string& study_name,
                           const std::string& explicit_path);
std::string default_study_name(const std::string& suite);

// Runs the study; returns the process exit status (0 when at least one trial completed).
int tune(const TuneOptions& options);

}  // namespace cuvil::tuner
