// cuvil-bench verify: the compiled pipeline against the reference interpreter.
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "base/error.h"
#include "bench_suite/suites.h"
#include "bench_suite/torch_baseline.h"
#include "bench_suite/verify.h"
#include "passes/cuvilpass.h"
#include "passes/random_config.h"
#include "passes/reduced_precision.h"
#include "passes/registry.h"
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

namespace {

// "ok", "ok, ill-conditioned (...)" or "FAIL (...)"; the reference's spread is known only past
// the bound.
std::string check_verdict(const OutputCheck& out, double tolerance) {
  char spread[160];
  std::snprintf(spread, sizeof spread, "the reference moves %.1e when its inputs move by %.0e",
                out.reference_spread, kConditioningPerturbation * tolerance);
  if (out.ill_conditioned) return std::string("ok, ill-conditioned: ") + spread;
  if (out.ok) return "ok";
  char bound[48];
  std::snprintf(bound, sizeof bound, "%.0e", tolerance);
  return std::string("FAIL (bound ") + bound + "; " + spread + ")";
}

struct VerifyOptions {
  PipelineOptions pipeline;
  std::string rungs;
  bool full_size = false;
  bool each_pass = false;
  int random_configs = 0;
  std::vector<std::string> random_exclude;
  bool random_exclude_given = false;  // else the suite's random_config_exclusions
  uint64_t seed = 1;
  std::string against;  // "torch": also the suite's PyTorch reference module
  std::string python = "/usr/bin/python3";
};

// --against torch, checked before anything runs.
void check_against(const VerifyOptions& o, const Suite& suite) {
  if (o.against.empty()) return;
  if (o.against != "torch")
    throw UserError("--against: unknown framework '" + o.against + "' (known: torch)");
  if (o.pipeline.target != "cpu") throw UserError("--against torch: checks the cpu target only");
  if (!suite.model_path.empty()) {
    throw UserError(
        "--against torch: compares the built-in suites with their reference modules; for a model "
        "file, run --model M.onnx --baseline torch --torch-module M.pt reports the error");
  }
  if (!has_torch_reference(suite.name)) {
    throw UserError("--against torch: no PyTorch reference module for suite '" + suite.name + "'");
  }
  if (!o.full_size && !has_scaled_down_torch_reference(suite.name)) {
    throw UserError("--against torch: " + suite.name +
                    "'s PyTorch reference exists at the real dimensions only: add --full-size");
  }
}

// The suite's PyTorch reference module (eager and TorchScript), loaded with the graph's own
// weights, on the inputs verify_graph gave the config (`ours`: its outputs): each output within
// the config's bound of cuvil's. Returns the number of failing variants.
int compare_with_torch(const Suite& suite, const Rung& rung, const ir::Graph& graph,
                       const std::vector<ir::Tensor>& ours, int threads, const VerifyOptions& o,
                       double tolerance) {
  const std::vector<ir::Tensor> inputs = ir::random_inputs(graph, o.seed);
  TorchBaselineSpec spec;
  spec.python = o.python;
  spec.builtin = suite.name;
  spec.scaled_down = !o.full_size;
  spec.threads = threads;
  TorchBaseline torch(spec, inputs, &graph, rung.params);
  int failures = 0;
  for (const std::string& variant : torch.variants()) {
    const std::vector<double> errors =
        relative_errors_vs_cuvil(torch.outputs(variant), ours, variant);
    bool ok = true;
    for (size_t i = 0; i < errors.size(); ++i) {
      const bool within = errors[i] <= tolerance;
      ok = ok && within;
      std::printf("%-16s %-26s %-26s %12.3e  %s\n", rung.name.c_str(),
                  (variant + " " + torch.torch_version()).c_str(),
                  graph.value(graph.outputs()[i]).name.c_str(), errors[i],
                  within ? "ok" : ("FAIL (bound " + std::to_string(tolerance) + ")").c_str());
    }
    if (!ok) ++failures;
  }
  for (const auto& [variant, why] : torch.unavailable()) {
    std::printf("%-16s %-26s not compared: %s\n", rung.name.c_str(), variant.c_str(), why.c_str());
  }
  return failures;
}

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
  const Workload workload = resolve_workload(o.pipeline.workload);
  const Suite& suite = workload.suite;
  check_against(o, suite);
  require_runnable_target(o.pipeline.target);
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
  int ill_conditioned = 0;
  for (const Rung& rung : rungs) {
    const ir::Graph graph = suite.build(rung, !o.full_size);
    // Scaled down, each variant is pinned to the kernels its full-size graph runs.
    const ir::Graph full = o.full_size ? ir::Graph() : suite.build(rung, /*tiny=*/false);
    const ReferenceRun reference = run_reference(graph, o.seed);
    std::vector<ir::Tensor> config_outputs;  // variants[0] is the config itself
    for (const auto& [label, variant] : variants) {
      const passes::Pins pins =
          o.full_size ? passes::Pins{} : passes::resolve_pins(full, variant, threads);
      const VerifyResult result = verify_graph(graph, reference, variant, threads, label, &pins);
      for (const OutputCheck& out : result.outputs) {
        std::printf("%-16s %-26s %-26s %12.3e  %s\n", rung.name.c_str(), label.c_str(),
                    out.name.c_str(), out.max_relative_error,
                    check_verdict(out, result.tolerance).c_str());
        if (out.ill_conditioned) ++ill_conditioned;
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
      if (config_outputs.empty()) config_outputs = result.actual;
    }
    if (!o.against.empty()) {
      failures += compare_with_torch(suite, rung, graph, config_outputs, threads, o, tolerance);
    }
  }
  if (ill_conditioned) {
    std::printf(
        "***WARNING*** %d output check(s) ill-conditioned: the reference itself moves past the "
        "bound when its inputs move by %.0e of it (the model rounds computed values: "
        "quantization, labels), so they were checked against that spread (x%.0f), not the bound\n",
        ill_conditioned, kConditioningPerturbation, kIllConditionedFactor);
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
      "  cuvil-bench verify --suite sdxl --config my.cuvilpass\n"
      "  cuvil-bench verify --suite llama3-8b --against torch   # and PyTorch's reference module");
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
  cmd->add_option("--against", o->against,
                  "torch: also compare cuvil's outputs with the suite's PyTorch reference module "
                  "(eager and TorchScript) on the same weights and inputs, within the same bound");
  cmd->add_option("--python", o->python, "Python with PyTorch (for --against)");
  return [o, exclude] {
    o->random_exclude_given = exclude->count() > 0;
    return run_verify(*o);
  };
}

}  // namespace cuvil::bench::cli
