#include "passes/pipeline.h"

#include <algorithm>

#include "base/error.h"
#include "passes/ir/verifier.h"
#include "passes/lower.h"
#include "passes/registry.h"
#include "passes/target_cpu.h"
#include "runtime/kernel_table.h"

namespace cuvil::passes {

namespace {

// Configs built in code (the tuner, tests) skip the file loader: check them the same way and
// fill in defaults, so a pass always sees every declared parameter with the right type.
ParamMap resolve_params(const Pass& pass, const ParamMap& given) {
  ParamMap params;
  const std::vector<ParamSpec> specs = pass.params();
  for (const ParamSpec& spec : specs) params[spec.name] = spec.default_value;
  for (const auto& entry : given) {
    const std::string& key = entry.first;
    const ParamValue& value = entry.second;
    auto it = params.find(key);
    if (it == params.end()) {
      throw UserError("pass '" + std::string(pass.name()) + "': unknown parameter '" + key + "'");
    }
    if (it->second.index() != value.index()) {
      throw UserError("pass '" + std::string(pass.name()) + "': parameter '" + key +
                      "' has the wrong type (" + format_value(value) + ")");
    }
    const ParamSpec& spec = *std::find_if(specs.begin(), specs.end(),
                                          [&](const ParamSpec& s) { return s.name == key; });
    const int64_t* i = std::get_if<int64_t>(&value);
    const double* r = std::get_if<double>(&value);
    if ((i && (*i < spec.int_min || *i > spec.int_max)) ||
        (r && !(*r >= spec.real_min && *r <= spec.real_max))) {
      throw UserError("pass '" + std::string(pass.name()) + "': parameter '" + key + "' value " +
                      format_value(value) + " is out of range: expected " + describe_range(spec));
    }
    it->second = value;
  }
  return params;
}

}  // namespace

void run_pipeline(ir::Graph& graph, const PipelineConfig& config, const StageFn& on_stage) {
  // A broken input is the caller's mistake, not a pass's: report it before any pass runs.
  ir::verify(graph);
  if (config.target == "cpu") {
    // Not value_or: that would probe the host (and ask for AMX) even when the file names them.
    if (config.cpu_features) {
      set_target_cpu(graph, *config.cpu_features, config.source);
    } else {
      set_target_cpu(graph, host_cpu_features(), "host");
    }
  }
  for (const PassInvocation& invocation : config.passes) {
    const Pass* pass = find_pass(invocation.name);
    if (pass == nullptr) throw UserError("unknown pass '" + invocation.name + "'");
    if (!pass->applies_to(config.target)) {
      throw UserError("pass '" + invocation.name + "' does not apply to target " + config.target +
                      " (it applies to: " + applicable_targets(*pass) + ")");
    }
    if (on_stage) on_stage("pass " + invocation.name);
    pass->run(graph, resolve_params(*pass, invocation.params));
    try {
      ir::verify(graph);
    } catch (const UserError& e) {
      CUVIL_CHECK(false, "pass '" + invocation.name + "' left an invalid graph: " + e.what());
    }
  }
}

Pins resolve_pins(const ir::Graph& measured, const PipelineConfig& config, int threads) {
  Pins pins;
  if (config.target != "cpu") return pins;
  ir::Graph g = measured;  // shares the constants' storage
  run_pipeline(g, config);
  std::map<std::string, int> seen;
  for (const ir::Node& n : g.nodes()) ++seen[n.name];
  for (const ir::Node& n : g.nodes()) {
    if (seen[n.name] != 1 || !n.attrs.has("impl")) continue;  // names must identify nodes
    // Pins keep the origins of the attributes they resolve (knob reach, runtime/plan.h).
    ir::Attrs attrs;
    attrs.set("impl", n.attrs.get_string("impl", ""), n.attrs.origin("impl"));
    const runtime::KernelInfo* k = runtime::find_kernel(n.op, attrs.get_string("impl", ""));
    if (k && k->pin) {
      const ir::Attrs resolved = k->pin(probe_step(g, n), threads);
      for (const auto& [key, value] : resolved.entries())
        attrs.set(key, value, n.attrs.origin(key));
    }
    pins.by_node[n.name] = std::move(attrs);
  }
  return pins;
}

namespace {

void apply_pins(ir::Graph& graph, const Pins& pins) {
  int64_t applied = 0, refused = 0;
  for (ir::Node& n : graph.mutable_nodes()) {
    auto it = pins.by_node.find(n.name);
    if (it == pins.by_node.end()) continue;
    ir::Node pinned = n;
    for (const auto& [key, value] : it->second.entries()) {
      const std::string origin = it->second.origin(key);
      pinned.attrs.set(key, value, origin.empty() ? n.attrs.origin(key) : origin);
    }
    const runtime::KernelInfo* k = runtime::find_kernel(n.op, pinned.attrs.get_string("impl", ""));
    if (!k || (k->supports && !k->supports(probe_step(graph, pinned)))) {
      ++refused;
      continue;
    }
    n.attrs = pinned.attrs;
    ++applied;
  }
  graph.annotations["pins.applied"] = applied;
  graph.annotations["pins.refused"] = refused;
}

}  // namespace

Compiled compile(ir::Graph graph, const PipelineConfig& config, int threads, const Pins* pins,
                 const StageFn& on_stage) {
  run_pipeline(graph, config, on_stage);
  if (on_stage) on_stage("lowering");
  if (pins != nullptr) apply_pins(graph, *pins);
  LowerOptions options;
  options.threads = threads;
  options.target = config.target;
  // The compiled graph lets go of the weights the plan replaced by prepared forms.
  runtime::Plan plan = lower_releasing(graph, options);
  return Compiled{std::move(graph), std::move(plan)};
}

}  // namespace cuvil::passes
