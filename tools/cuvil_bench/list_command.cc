// cuvil-bench list: suites with their rungs, and the pass registry with every parameter; with
// --model, what an ONNX model holds (inputs, outputs, operators, parameters, declared FLOPs).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"
#include "bench_suite/models/onnx/host_tensor.h"
#include "bench_suite/models/onnx/importer.h"
#include "bench_suite/reach.h"
#include "bench_suite/suites.h"
#include "bench_suite/workload_options.h"
#include "passes/pipeline.h"
#include "passes/registry.h"
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

namespace {

void print_rungs(const Ladder& ladder) {
  for (const Rung& rung : ladder.rungs) {
    std::string params;
    for (const auto& [k, v] : rung.params) params += " " + k + "=" + std::to_string(v);
    std::printf("    %c %-22s%s\n", rung.is_default ? '*' : ' ', rung.name.c_str(), params.c_str());
  }
}

void print_suites() {
  std::printf("Suites (rungs light to heavy; * = in the default CPU ladder)\n");
  for (const Suite& suite : suites()) {
    std::printf("  %-10s %s\n", suite.name.c_str(), suite.summary.c_str());
    print_rungs(load_suite_ladder(suite));
  }
}

void print_passes() {
  std::printf("\nPasses (registry order is the default pipeline order)\n");
  for (const auto& pass : passes::pass_registry()) {
    std::printf("  %-18s %s\n", std::string(pass->name()).c_str(),
                std::string(pass->summary()).c_str());
    for (const passes::ParamSpec& p : pass->params()) {
      std::printf("      %-20s %-6s default %-14s %s\n", p.name.c_str(),
                  std::string(passes::to_string(p.type)).c_str(),
                  passes::format_value(p.default_value).c_str(), passes::describe_range(p).c_str());
      if (!p.help.empty()) std::printf("      %-20s %s\n", "", p.help.c_str());
    }
  }
}

// The same data as the tables, for --json.
nlohmann::json rungs_json(const Ladder& ladder) {
  nlohmann::json rungs = nlohmann::json::array();
  for (const Rung& rung : ladder.rungs) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [k, v] : rung.params) params[k] = v;
    rungs.push_back({{"name", rung.name}, {"default", rung.is_default}, {"params", params}});
  }
  return rungs;
}

nlohmann::json suite_json(const Suite& suite, const Ladder& ladder) {
  return {{"name", suite.name}, {"summary", suite.summary}, {"rungs", rungs_json(ladder)}};
}

nlohmann::json passes_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& pass : passes::pass_registry()) {
    nlohmann::json params = nlohmann::json::array();
    for (const passes::ParamSpec& p : pass->params()) {
      params.push_back({{"name", p.name},
                        {"type", std::string(passes::to_string(p.type))},
                        {"default", passes::format_value(p.default_value)},
                        {"range", passes::describe_range(p)},
                        {"help", p.help}});
    }
    list.push_back({{"name", std::string(pass->name())},
                    {"summary", std::string(pass->summary())},
                    {"params", std::move(params)}});
  }
  return list;
}

std::string dims_text(const onnx_import::OnnxInput& in) {
  std::string s;
  for (size_t d = 0; d < in.dims.size(); ++d) {
    s += d ? "x" : "";
    s += in.dims[d] > 0 ? std::to_string(in.dims[d])
                        : (in.dim_names[d].empty() ? "?" : in.dim_names[d]);
  }
  return s.empty() ? "(scalar)" : s;
}

// The model as imported at each rung of its ladder: interface, operators and declared work.
void print_model(const WorkloadSpec& spec) {
  const Workload w = resolve_workload(spec);
  const onnx_import::OnnxModel model = onnx_import::load_onnx_model(spec.model);
  std::printf("Model %s\n  %s\n  sha256 %s\n", w.suite.model_path.c_str(), w.suite.summary.c_str(),
              w.suite.model_sha256.c_str());
  std::printf("  inputs (as declared):\n");
  for (const auto& in : model.inputs) {
    std::printf("    %-24s %-8s %s\n", in.name.c_str(),
                onnx_import::onnx_type_name(in.elem_type).c_str(), dims_text(in).c_str());
  }
  std::printf("  operators:");
  for (const auto& [op, count] : onnx_import::operator_counts(model)) {
    std::printf(" %s x%lld", op.c_str(), static_cast<long long>(count));
  }
  std::printf("\n  rungs (%s):\n", w.ladder.source.c_str());
  print_rungs(w.ladder);
  for (const Rung& rung : w.ladder.rungs) {
    ir::Graph graph = w.suite.build(rung, /*tiny=*/false);
    std::printf("  %s/%s:\n", w.suite.name.c_str(), rung.name.c_str());
    for (ir::ValueId id : graph.inputs()) {
      const ir::Value& v = graph.value(id);
      std::printf("    input  %-24s %-4s %s\n", v.name.c_str(),
                  std::string(ir::to_string(v.dtype)).c_str(), ir::to_string(v.shape).c_str());
    }
    for (ir::ValueId id : graph.outputs()) {
      const ir::Value& v = graph.value(id);
      std::printf("    output %-24s %-4s %s\n", v.name.c_str(),
                  std::string(ir::to_string(v.dtype)).c_str(), ir::to_string(v.shape).c_str());
    }
    auto annotation = [&](const char* key) {
      const auto found = graph.annotations.find(key);
      return found == graph.annotations.end() ? int64_t{0} : found->second;
    };
    const int64_t params =
        graph.parameter_count() + annotation(bench::onnx_import::kRearrangedWeights);
    const int64_t dropped = annotation(bench::onnx_import::kDroppedPaddingTaps);
    const int64_t weight_bytes = graph.constant_bytes();
    const size_t nodes = graph.nodes().size();
    // Declared work as `run` reports it: the graph lowered without passes.
    passes::PipelineConfig none;
    const passes::Compiled c = passes::compile(std::move(graph), none, 1);
    std::printf("    %zu IR nodes, %lld parameters (%.1f MiB of constants), %.3f GFLOP declared\n",
                nodes, static_cast<long long>(params),
                static_cast<double>(weight_bytes) / (1 << 20), c.plan.total_flops() * 1e-9);
    if (dropped > 0) {
      std::printf("    and %lld parameters of convolution taps that read only padding, dropped\n",
                  static_cast<long long>(dropped));
    }
  }
}

// --reach: per rung, each registered CPU knob with the steps it reaches (bench_suite/reach.h).
void print_reach(const WorkloadSpec& spec, const std::string& rung_selection) {
  const Workload w = resolve_workload(spec);
  const passes::PipelineConfig base = passes::default_pipeline("cpu");
  std::set<std::string> reached_somewhere;
  std::vector<std::string> names;
  for (const Rung& rung : select_rungs(w.ladder, rung_selection)) {
    const RungReach r = knob_reach(w.suite, rung, base);
    const std::string where = w.suite.name + "/" + rung.name;
    names.push_back(where);
    std::printf(
        "Knob reach at %s (default pipeline and %d one-choice variants, scaled-down graph "
        "with the full size's kernels)\n",
        where.c_str(), r.configs - 1);
    std::string nothing;
    for (const std::string& knob : registered_knobs("cpu")) {
      if (r.plan_wide.count(knob)) {
        auto under = r.only_under.find(knob);
        std::printf("  %-38s plan-wide%s\n", knob.c_str(),
                    under == r.only_under.end() ? "" : (" (with " + under->second + ")").c_str());
      } else if (auto it = r.steps.find(knob); it != r.steps.end()) {
        int total = 0;
        std::string kernels;
        for (const auto& [kernel, n] : it->second) {
          total += n;
          kernels += (kernels.empty() ? "" : ", ") + kernel + " x" + std::to_string(n);
        }
        auto under = r.only_under.find(knob);
        std::printf("  %-38s %d step(s): %s%s\n", knob.c_str(), total, kernels.c_str(),
                    under == r.only_under.end() ? "" : (" (with " + under->second + ")").c_str());
      } else {
        nothing += (nothing.empty() ? "" : " ") + knob;
        continue;
      }
      reached_somewhere.insert(knob);
    }
    std::printf("  reaches nothing: %s\n", nothing.empty() ? "(none)" : nothing.c_str());
  }
  if (names.size() > 1) {
    std::string nothing;
    for (const std::string& knob : registered_knobs("cpu")) {
      if (!reached_somewhere.count(knob)) nothing += (nothing.empty() ? "" : " ") + knob;
    }
    std::printf("Reaches no step at any of these rungs: %s\n",
                nothing.empty() ? "(none)" : nothing.c_str());
  }
}

}  // namespace

Action add_list_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "list", "suites, rungs, passes and their parameters; with --model, what the model holds");
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench list\n"
      "  cuvil-bench list passes\n"
      "  cuvil-bench list --suite resnet50\n"
      "  cuvil-bench list --json\n"
      "  cuvil-bench list --model model.onnx");
  auto what = std::make_shared<std::string>("all");
  auto spec = std::make_shared<WorkloadSpec>();
  cmd->add_option("what", *what, "all | suites | passes")
      ->check(CLI::IsMember({"all", "suites", "passes"}));
  add_workload_options(*cmd, *spec);
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json,
                "print JSON instead of the tables: suites with their rungs, passes with their "
                "parameters (not with --model)");
  auto reach = std::make_shared<bool>(false);
  auto rungs = std::make_shared<std::string>();
  cmd->add_flag("--reach", *reach,
                "with --suite or --model: each registered CPU knob (pass.param) with the plan "
                "steps it reaches per rung, and the knobs that reach nothing");
  cmd->add_option("--rungs", *rungs,
                  "with --reach: rung names, comma-separated, or all "
                  "(default: the default rungs)");
  return [what, spec, json, reach, rungs] {
    if (*reach) {
      if (spec->suite.empty() && spec->model.empty()) {
        throw UserError("list --reach needs --suite or --model");
      }
      print_reach(*spec, *rungs);
      return 0;
    }
    if (!rungs->empty()) throw UserError("list --rungs goes with --reach");
    if (*json) {
      if (!spec->model.empty()) throw UserError("list --json: not with --model (yet)");
      nlohmann::json out = nlohmann::json::object();
      if (!spec->suite.empty()) {
        const Workload w = resolve_workload(*spec);
        out["suites"] = nlohmann::json::array({suite_json(w.suite, w.ladder)});
      } else {
        if (*what != "passes") {
          out["suites"] = nlohmann::json::array();
          for (const Suite& suite : suites()) {
            out["suites"].push_back(suite_json(suite, load_suite_ladder(suite)));
          }
        }
        if (*what != "suites") out["passes"] = passes_json();
      }
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (!spec->model.empty()) {
      print_model(*spec);
      return 0;
    }
    if (!spec->suite.empty()) {
      const Workload w = resolve_workload(*spec);
      std::printf("  %-10s %s\n", w.suite.name.c_str(), w.suite.summary.c_str());
      print_rungs(w.ladder);
      return 0;
    }
    if (*what != "passes") print_suites();
    if (*what != "suites") print_passes();
    return 0;
  };
}

}  // namespace cuvil::bench::cli
