// cuvil-bench subcommands. Each registers its CLI11 subcommand and options and returns the
// action to run when it was chosen; actions return the process exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "bench_suite/workload.h"
#include "passes/cuvilpass.h"

namespace cuvil::reports {
class ResultsStore;
}

namespace cuvil::bench::cli {

using Action = std::function<int()>;

Action add_list_command(CLI::App& app);
Action add_verify_command(CLI::App& app);
Action add_infer_command(CLI::App& app);
Action add_run_command(CLI::App& app);
Action add_serve_command(CLI::App& app);
Action add_history_command(CLI::App& app);
Action add_compare_command(CLI::App& app);
Action add_confirm_command(CLI::App& app);
Action add_tune_command(CLI::App& app);
Action add_report_command(CLI::App& app);
Action add_probes_command(CLI::App& app);
// `report` subcommands, each in its own file (report_<name>_command.cc).
Action add_report_flame(CLI::App& report);
Action add_report_dashboard(CLI::App& report);

// Options shared by commands that compile a suite or a model.
struct PipelineOptions {
  WorkloadSpec workload;  // --suite, or --model with --input/--batch/--ladder
  std::string config;     // empty: configs/<suite>.<target>.cuvilpass (model: model.<target>)
  std::string opt_level;  // O0..O3 instead of --config (O2: the default pipeline)
  bool force = false;     // use a config written for another suite or model
  std::string target = "cpu";
  int threads = 0;  // 0: every core
};
void add_pipeline_options(CLI::App& command, PipelineOptions& options);
// The .cuvilpass the options name, or the workload's default for the target.
std::string config_path_for(const PipelineOptions& options, const Suite& suite);
// Loads it, refusing a config whose `suite:` names another suite or model unless --force.
passes::PipelineConfig load_config_for(const PipelineOptions& options, const Suite& suite,
                                       const std::string& path);
int resolved_threads(const PipelineOptions& options);
// Rejects targets this build cannot run, with the reason.
void require_runnable_target(const std::string& target);

// The results database option (--db) of run, history and compare (results_db_option.cc).
struct DbOptions {
  std::string path;       // empty: reports::default_database_path()
  bool disabled = false;  // run --no-db or --db '': store nothing
};
// allow_disable: run may turn storing off (--no-db, --db ''); history and compare may not.
void add_db_option(CLI::App& command, DbOptions& options, bool allow_disable);
// The database file to use, or empty when storing is disabled.
std::string resolved_db_path(const DbOptions& options);
// Stores a finished run.json document (one transaction) unless disabled, and says where.
void store_run_document(const DbOptions& options, const nlohmann::json& document);

// Before a long measurement: everything it will write is checked first, so that a run is not
// lost at its end to a missing directory or an unusable database. `out` and `probe_dir` may be
// empty. The database is opened (created and migrated) now, and kept for the end.
class RunOutputs {
 public:
  RunOutputs(const DbOptions& db, std::string out, std::string probe_dir);
  ~RunOutputs();
  // Writes --out and stores the run. If either fails the document goes to a fallback file
  // instead, whose path the error names: a finished measurement is never lost.
  void finish(const nlohmann::json& document);

 private:
  std::string out_;
  std::unique_ptr<reports::ResultsStore> store_;
};

// A finite number in [min, max]. CLI::Range lets NaN through (every comparison with it is
// false), which would silently turn off whatever the option bounds.
CLI::Validator finite_range(double min, double max);

}  // namespace cuvil::bench::cli
