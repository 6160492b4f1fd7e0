#include "tuner/python_scenario.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "bench_suite/python_child.h"
#include "passes/python_binding.h"

namespace cuvil::tuner {

namespace {

constexpr int kMaxCallers = 64;
constexpr double kLoadTimeoutS = 900;  // compiling a large rung in the worker

std::string worker_script() {
  const char* dir = std::getenv("CUVIL_BENCH_PYTHON_DIR");
  return std::string(dir && *dir ? dir : CUVIL_SOURCE_DIR "/bench_suite/python") +
         "/tune_python_worker.py";
}

// The trial's configuration as a .cuvilpass file the worker compiles with; removed on scope exit.
struct ConfigFile {
  std::string path;
  explicit ConfigFile(const passes::PipelineConfig& config) {
    path = (std::filesystem::temp_directory_path() /
            ("cuvil-trial-" + std::to_string(getpid()) + ".cuvilpass"))
               .string();
    std::ofstream out(path);
    out << passes::to_yaml(config);
    if (!out) throw UserError("cannot write the trial's configuration to " + path);
  }
  ~ConfigFile() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
};

}  // namespace

std::string python_module_dir() {
  const char* dir = std::getenv("CUVIL_PYTHON_MODULE_DIR");
  return dir && *dir ? dir : CUVIL_PYTHON_MODULE_DIR;
}

void check_python_scenario(const PythonScenarioOptions& o) {
  if (o.callers < 1 || o.callers > kMaxCallers) {
    throw UserError("--python-callers must be in 1.." + std::to_string(kMaxCallers) + ", got " +
                    std::to_string(o.callers));
  }
  const std::filesystem::path package = std::filesystem::path(python_module_dir()) / "cuvil";
  if (!std::filesystem::is_directory(package)) {
    throw UserError("--scenario python: the cuvil Python module is not built (no " +
                    package.string() +
                    "; scripts/setup.sh builds it with pybind11-dev and python3-dev)");
  }
}

void search_python_boundary(SearchSpace& space) {
  for (Dimension& d : space.dims) {
    if (d.pass != passes::kPythonBindingPass || d.param.empty()) continue;
    d.fixed.reset();
  }
}

PythonRungMeasurement measure_through_python(const std::string& suite, const bench::Rung& rung,
                                             const passes::PipelineConfig& config,
                                             const PythonScenarioOptions& o,
                                             const bench::MeasureOptions& measure) {
  const ConfigFile file(config);
  bench::PythonChildOptions co;
  co.what = "the Python scenario worker";
  co.python = o.python;
  co.script = worker_script();
  co.reply_timeout_s = kLoadTimeoutS;
  const char* existing = std::getenv("PYTHONPATH");
  co.env.push_back(
      {"PYTHONPATH", python_module_dir() +
                         (existing && *existing ? std::string(":") + existing : std::string())});
  bench::PythonChild worker(co);
  const nlohmann::json loaded = worker.call_ok({{"op", "load"},
                                                {"model", suite + "/" + rung.name},
                                                {"config", file.path},
                                                {"threads", std::max(1, o.threads / o.callers)},
                                                {"callers", o.callers}});
  PythonRungMeasurement out;
  out.gil_check_steps = loaded.value("gil_check_steps", 0);
  out.measurement = bench::measure(
      [&] {
        const nlohmann::json r = worker.call_ok({{"op", "sample"}});
        return bench::Sample{r.at("real_ns").get<double>(), r.at("cpu_ns").get<double>()};
      },
      measure);
  const nlohmann::json stopped = worker.call_ok({{"op", "stop"}});
  if (stopped.contains("gil_free") && stopped["gil_free"].is_number()) {
    out.gil_free = stopped["gil_free"].get<double>();
  }
  return out;
}

}  // namespace cuvil::tuner
