// `cuvil-bench tune --scenario python`: a trial's rungs measured through the `cuvil` Python
// module (bench_suite/python/tune_python_worker.py) instead of in-process, so the Python
// boundary's knobs (python-binding.gil_check) are searched and their cost is in the objective.
// `callers` Python threads call one CompiledModel at once, each call with threads / callers
// intra-op threads, while an application thread runs pure Python beside them; one call's
// latency is one harness sample (the same stopping rule as every other measurement).
#pragma once

#include <string>

#include "bench_suite/ladder.h"
#include "bench_suite/measure.h"
#include "passes/cuvilpass.h"
#include "tuner/search_space.h"

namespace cuvil::tuner {

inline constexpr const char* kNativeScenario = "native";
inline constexpr const char* kPythonScenario = "python";

struct PythonScenarioOptions {
  std::string python = "/usr/bin/python3";
  int callers = 2;  // Python threads calling the model at once
  int threads = 1;  // intra-op threads in all: each call gets max(1, threads / callers)
};

struct PythonRungMeasurement {
  bench::Measurement measurement;
  // The application thread's pure-Python rate while the model ran, over its rate alone: 1 means
  // the model left the GIL to the program entirely.
  double gil_free = -1;
  int gil_check_steps = 0;  // as the plan read it
};

// Where the built module lives: $CUVIL_PYTHON_MODULE_DIR, else the build tree's python/.
std::string python_module_dir();

// UserError (before any trial) when the scenario cannot run: the module is not built, or
// `callers` is out of range.
void check_python_scenario(const PythonScenarioOptions& options);

// In a python scenario the python-binding pass's parameters are searched (the pass is not tuned
// by default: outside Python nothing reads them). A space file loaded after may narrow them.
void search_python_boundary(SearchSpace& space);

// Compiles suite/rung with `config` in a Python worker and measures it there.
PythonRungMeasurement measure_through_python(const std::string& suite, const bench::Rung& rung,
                                             const passes::PipelineConfig& config,
                                             const PythonScenarioOptions& options,
                                             const bench::MeasureOptions& measure);

}  // namespace cuvil::tuner
