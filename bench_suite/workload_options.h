// The command-line options that name a workload (--suite, or --model with --input, --batch and
// --ladder), shared by cuvil-bench's commands and cuvil-tune-gen.
#pragma once

#include <CLI/CLI.hpp>

#include "bench_suite/workload.h"

namespace cuvil::bench {

void add_workload_options(CLI::App& command, WorkloadSpec& spec);

}  // namespace cuvil::bench
