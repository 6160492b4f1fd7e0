#include "tools/cuvil_bench/run_context.h"

#include <cstdio>

#include "base/text_file.h"
#include "bench_suite/environment.h"
#include "bench_suite/progress.h"

namespace cuvil::bench::cli {

RunContext measurement_context(const std::string& executable, const std::string& config_path,
                               const passes::PipelineConfig& config, const std::string& target,
                               int threads, const std::string& noisy_what,
                               double* busy_other_cpus) {
  RunContext context;
  context.executable = executable;
  context.config_source = config_path;
  context.config_hash = passes::config_hash(config);
  context.target = target;
  context.config_yaml = read_file_or_empty(config_path);
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
