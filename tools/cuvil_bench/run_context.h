// The context `run` and `serve` write beside their measurements (json_report.h's RunContext):
// the configuration and the machine, and the machine's warnings, printed now, before the
// measurements they concern. One place, so both commands warn alike.
#pragma once

#include <string>

#include "bench_suite/json_report.h"
#include "passes/cuvilpass.h"

namespace cuvil::bench::cli {

// Another process using this much CPU at the start gets a warning.
inline constexpr double kBusyOtherCpusWarning = 0.5;
inline constexpr double kBusyProbeWindowS = 0.25;

// The fields both commands fill; `noisy_what` names what the load disturbs ("timings",
// "latencies"). `busy_other_cpus` receives how many CPUs other processes were using.
RunContext measurement_context(const std::string& executable, const std::string& config_path,
                               const passes::PipelineConfig& config, const std::string& target,
                               int threads, const std::string& noisy_what,
                               double* busy_other_cpus = nullptr);

}  // namespace cuvil::bench::cli
