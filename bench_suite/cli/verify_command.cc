// cuvil-bench verify: the compiled pipeline against the reference interpreter.
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "bench_suite/cli/commands.h"
#include "bench_suite/suites.h"
#include "bench_suite/verify.h"
#include "passes/cuvilpass.h"
#include "passes/ir/error.h"
#include "passes/precision.h"
#include "passes/random_config.h"
#include "passes/registry.h"

namespace cuvil::bench::cli {

namespace {

struct VerifyOptions {
  PipelineOptions pipeline;
  std::string rungs;
  bool full_size = false;
  bool each_pass = false;
  int random_configs = 0;
  std::vector<std::string> random_exclude;
  bool random_exclude_given = false;  // else the suite's random_config_exclusions
  uint64_t seed = 1;
};

bool is_registered_choice(const std::string& value) {
  for (const auto& pass : passes::pass_registry()) {
    for (const passes::ParamSpec& spec : pass->params()) {
      for (const std::string& choice : spec.choices) {
        if (choice == value) return true;
      }
    }
  }
  return false;
}

int run_verify(const VerifyOptions& o) {
  require_runnable_target(o.pipeline.target);
  const Workload workload = resolve_workload(o.pipeline.workload);
  const Suite& suite = workload.suite;
  const std::string config_path = config_path_for(o.pipeline, suite);
  const passes::PipelineConfig config = load_config_for(o.pipeline, suite, config_path);
  const std::vector<Rung> rungs = select_rungs(workload.ladder, o.rungs);
  const int threads = resolved_threads(o.pipeline);
  auto variants =
      o.each_pass ? pass_variants(config)
                  : std::vector<std::pair<std::string, passes::PipelineConfig>>{{"config", config}};
  // '' (--random-exclude '') leaves nothing out.
  std::set<std::string> exclude;
  for (const std::string& value :
       o.random_exclude_given ? o.random_exclude : suite.random_config_exclusions) {
    if (value.empty()) continue;
    exclude.insert(value);
    if (!is_registered_choice(value)) {
      throw UserError("--random-exclude: '" + value +
                      "' is not a choice of any pass parameter (see cuvil-bench list passes)");
    }
  }
  for (int i = 0; i < o.random_configs; ++i) {
    const uint64_t seed = o.seed * 1000 + static_cast<uint64_t>(i);
    variants.push_back(
        {"random seed " + std::to_string(seed),
         passes::random_pipeline(o.pipeline.target, seed, {exclude.begin(), exclude.end()})});
  }

  std::string precision;
  const double tolerance = passes::precision_tolerance(config, &precision);
  std::printf(
      "verify %s (%s sizes) with %s, %d thread(s); tolerance %.0e (max relative error, %s bound)\n",
      suite.name.c_str(), o.full_size ? "full" : "scaled-down", config_path.c_str(), threads,
      tolerance, precision.c_str());
  if (o.random_configs > 0 && !exclude.empty()) {
    std::string list;
    for (const std::string& value : exclude) list += (list.empty() ? "" : ", ") + value;
    std::printf(
        "random configurations never draw: %s (%s; --random-exclude '' draws every choice)\n",
        list.c_str(),
        o.random_exclude_given ? "--random-exclude"
                               : ("the " + suite.name + " suite's default").c_str());
  }
  std::printf("%-16s %-26s %-26s %12s  %s\n", "rung", "pipeline", "output", "max rel err",
              "result");
  int failures = 0;
  for (const Rung& rung : rungs) {
    const ir::Graph graph = suite.build(rung, !o.full_size);
    // Scaled down, each variant is pinned to the kernels its full-size graph runs.
    const ir::Graph full = o.full_size ? ir::Graph() : suite.build(rung, /*tiny=*/false);
    for (const auto& [label, variant] : variants) {
      const passes::Pins pins =
          o.full_size ? passes::Pins{} : passes::resolve_pins(full, variant, threads);
      const VerifyResult result = verify_graph(graph, variant, threads, o.seed, label, &pins);
      for (const OutputCheck& out : result.outputs) {
        std::printf(
            "%-16s %-26s %-26s %12.3e  %s\n", rung.name.c_str(), label.c_str(), out.name.c_str(),
            out.max_relative_error,
            out.ok ? "ok" : ("FAIL (bound " + std::to_string(result.tolerance) + ")").c_str());
      }
      if (label == "config" && !o.full_size) {
        std::string kernels;
        for (const auto& [k, n] : result.kernels) kernels += " " + k + " x" + std::to_string(n);
        std::printf("%-16s %-26s pinned %lld node(s) to the full-size graph's kernels:%s\n",
                    rung.name.c_str(), "", static_cast<long long>(result.pinned), kernels.c_str());
      }
      if (!result.ok() && label.rfind("random", 0) == 0) {
        std::printf("%s", passes::to_yaml(variant).c_str());  // the failing draw, reproducible
      }
      if (!result.ok()) ++failures;
    }
  }
  if (failures) {
    std::printf("verify: %d pipeline variant(s) FAILED\n", failures);
    return 1;
  }
  std::printf("verify: all outputs within tolerance\n");
  return 0;
}

}  // namespace

Action add_verify_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("verify",
                                     "compiled pipeline vs the reference interpreter (exit 1 on a "
                                     "mismatch)");
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench verify --suite resnet50 --rungs b1\n"
      "  cuvil-bench verify --suite sdxl --config my.cuvilpass");
  auto o = std::make_shared<VerifyOptions>();
  add_pipeline_options(*cmd, o->pipeline);
  cmd->add_option("--rungs", o->rungs,
                  "comma-separated rung names, or all (default: the default "
                  "rungs)");
  cmd->add_flag("--full-size", o->full_size,
                "check the rungs at their real dimensions (slow: the interpreter is fp64) instead "
                "of the scaled-down topology");
  cmd->add_flag("--each-pass", o->each_pass,
                "also check no passes, each pass alone, and the config without each pass");
  cmd->add_option("--random-configs", o->random_configs,
                  "also check N pipelines drawn at random from every registered knob (each with "
                  "its precision's bound)")
      ->check(CLI::Range(0, 10000));
  CLI::Option* exclude =
      cmd->add_option("--random-exclude", o->random_exclude,
                      "choice values random configurations never draw, e.g. int8 (whose stated "
                      "bound holds for ResNet-50 only); default: the suite's (int8 for llama3-8b "
                      "and sdxl, nothing for resnet50); '' draws every choice")
          ->delimiter(',');
  cmd->add_option("--seed", o->seed, "seed for the random inputs and random configurations");
  return [o, exclude] {
    o->random_exclude_given = exclude->count() > 0;
    return run_verify(*o);
  };
}

}  // namespace cuvil::bench::cli
