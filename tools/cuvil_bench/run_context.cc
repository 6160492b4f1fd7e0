#include "tools/cuvil_bench/run_context.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench_suite/environment.h"
#include "bench_suite/progress.h"

namespace cuvil::bench::cli {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

RunContext measurement_context(const std::string& executable, const std::string& config_path,
                               const passes::PipelineConfig& config, const std::string& target,
                               int threads, const std::string& noisy_what,
                               double* busy_other_cpus) {
  RunContext context;
  context.executable = executable;
  context.config_source = config_path;
  context.config_hash = passes::config_hash(config);
  context.target = target;
  context.config_yaml = read_text(config_path);
  context.environment = capture_environment();
  context.threads = threads;
  context.warnings = environment_warnings(context.environment, threads);
  const double busy_others = other_processes_busy_cpus(kBusyProbeWindowS);
  if (busy_others > kBusyOtherCpusWarning) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "other processes are using %.1f CPUs right now: %s will be noisy", busy_others,
                  noisy_what.c_str());
    context.warnings.push_back(buf);
  }
  for (const std::string& w : context.warnings) print_warning(w);
  if (busy_other_cpus != nullptr) *busy_other_cpus = busy_others;
  return context;
}

}  // namespace cuvil::bench::cli
