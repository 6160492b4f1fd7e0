// cuvil-bench: list suites and passes, verify compiled pipelines, run the load ladder.
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "bench_suite/cli_conventions.h"
#include "bench_suite/environment.h"
#include "bench_suite/workload_options.h"
#include "passes/targets.h"
#include "reports/printable.h"
#include "runtime/cuda/device.h"
#include "tools/cuvil_bench/commands.h"
#include "tools/cuvil_bench/start_environment.h"

namespace cuvil::bench::cli {

std::string config_path_for(const PipelineOptions& options, const Suite& suite) {
  if (!options.config.empty()) return options.config;
  return opt_level_config_path(suite, options.target,
                               options.opt_level.empty() ? "O2" : options.opt_level);
}

passes::PipelineConfig load_config_for(const PipelineOptions& options, const Suite& suite,
                                       const std::string& path) {
  passes::PipelineConfig config = passes::load_cuvilpass(path);
  if (!config.suite.empty() && config.suite != suite.name && !options.force) {
    throw UserError(path + ": suite: the pipeline was written for '" + config.suite +
                    "', this is '" + suite.name + "' (--force uses it anyway)");
  }
  return config;
}

void add_pipeline_options(CLI::App& command, PipelineOptions& options) {
  add_workload_options(command, options.workload);
  CLI::Option* config =
      command.add_option("--config", options.config,
                         "a .cuvilpass pipeline (default: configs/<suite>.<target>.cuvilpass; "
                         "configs/model.<target>.cuvilpass for --model)");
  command
      .add_option("--opt-level", options.opt_level,
                  "O0 (no passes), O1 (folding, fusion, layout), O2 (the default pipeline), O3 "
                  "(O2 with bf16 where the CPU has it; bound 1e-1); instead of --config")
      ->check(CLI::IsMember(kOptLevels))
      ->excludes(config);
  command.add_flag("--force", options.force,
                   "use a --config whose suite: names another suite or model");
  command.add_option("--target", options.target, "cpu | cuda")
      ->check(CLI::IsMember(
          std::vector<std::string>(std::begin(passes::kTargets), std::end(passes::kTargets))));
  command.add_option("--threads", options.threads, "worker threads (0: every core)")
      ->check(CLI::Range(0, 1024));
}

int resolved_threads(const PipelineOptions& options) {
  if (options.threads > 0) return options.threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void require_runnable_target(const std::string& target) {
  if (target != "cuda") return;
  // Says exactly why (no driver, no device, no toolkit in this build) instead of failing later.
  if (const std::string reason = cuvil::runtime::cuda::cuda_unavailable_reason(); !reason.empty()) {
    throw UserError("--target cuda: " + reason);
  }
}

}  // namespace cuvil::bench::cli

// An exception nothing expected (EX_SOFTWARE): distinct from bad input (2).
constexpr int kInternalErrorStatus = 70;

// Bad input, from the start environment or a command: one line, exit 2.
static int bad_input(const cuvil::UserError& e) {
  std::fprintf(stderr, "cuvil-bench: error: %s\n", cuvil::reports::printable(e.what()).c_str());
  return 2;
}

int main(int argc, char** argv) {
  using namespace cuvil::bench::cli;
  try {
    choose_start_environment(argc, argv);  // first: it may re-execute this program
  } catch (const cuvil::UserError& e) {
    return bad_input(e);
  }
  cuvil::bench::keep_freed_memory_for_reuse();
  CLI::App app{
      "cuvil-bench: take the Cuvil pipeline's workloads through the compiler on a ladder "
      "of loads, verify and measure them"};
  // Every option's default in its help, in CLI11's one style ("[20]"); subcommands inherit this.
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  cuvil::bench::add_version_flag(app, "cuvil-bench");
  const Action list = add_list_command(app);
  const Action verify = add_verify_command(app);
  const Action infer = add_infer_command(app);
  const Action run = add_run_command(app);
  const Action serve = add_serve_command(app);
  const Action history = add_history_command(app);
  const Action compare = add_compare_command(app);
  const Action confirm = add_confirm_command(app);
  const Action tune = add_tune_command(app);
  const Action report = add_report_command(app);
  const Action probes = add_probes_command(app);
  cuvil::bench::tidy_defaults(app);
  if (const auto unknown = cuvil::bench::unknown_subcommand(app, argc, argv)) {
    std::fprintf(stderr, "cuvil-bench: error: %s\n", unknown->c_str());
    return cuvil::bench::kUsageErrorStatus;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cuvil::bench::handle_parse_error(app, e, "cuvil-bench");
  }
  try {
    if (app.got_subcommand("list")) return list();
    if (app.got_subcommand("verify")) return verify();
    if (app.got_subcommand("infer")) return infer();
    if (app.got_subcommand("run")) return run();
    if (app.got_subcommand("serve")) return serve();
    if (app.got_subcommand("history")) return history();
    if (app.got_subcommand("compare")) return compare();
    if (app.got_subcommand("confirm")) return confirm();
    if (app.got_subcommand("tune")) return tune();
    if (app.got_subcommand("report")) return report();
    if (app.got_subcommand("probes")) return probes();
  } catch (const cuvil::UserError& e) {
    return bad_input(e);
  } catch (const cuvil::OutOfMemory& e) {
    std::fprintf(stderr, "cuvil-bench: error: %s\n", cuvil::reports::printable(e.what()).c_str());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "cuvil-bench: error: out of memory\n");
    return 3;
  } catch (const nlohmann::json::exception& e) {
    // A reader that let a JSON document through unchecked: a bug, but never an abort.
    std::fprintf(stderr, "cuvil-bench: error: internal error: %s\n",
                 cuvil::reports::printable(e.what()).c_str());
    return kInternalErrorStatus;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuvil-bench: error: internal error: %s\n",
                 cuvil::reports::printable(e.what()).c_str());
    return kInternalErrorStatus;
  }
  return 2;
}
