// cuvil-bench subcommands. Each registers its CLI11 subcommand and options and returns the
// action to run when it was chosen; actions return the process exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace cuvil::bench::cli {

using Action = std::function<int()>;

Action add_list_command(CLI::App& app);
Action add_verify_command(CLI::App& app);
Action add_run_command(CLI::App& app);
Action add_tune_command(CLI::App& app);
Action add_serve_command(CLI::App& app);

// Options shared by commands that compile a suite.
struct PipelineOptions {
  std::string suite;
  std::string config;  // empty: configs/<suite>.<target>.cuvilpass
  std::string target = "cpu";
  int threads = 0;  // 0: every core
};
void add_pipeline_options(CLI::App& command, PipelineOptions& options);
int resolved_threads(const PipelineOptions& options);
// Rejects targets this build cannot run, with the reason.
void require_runnable_target(const std::string& target);

}  // namespace cuvil::bench::cli
