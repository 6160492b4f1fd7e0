#include "passes/pipeline.h"

#include "passes/ir/error.h"
#include "passes/lower.h"
#include "passes/registry.h"

namespace cuvil::passes {

namespace {

// Configs built in code (the tuner, tests) skip the file loader: check them the same way and
// fill in defaults, so a pass always sees every declared parameter with the right type.
ParamMap resolve_params(const Pass& pass, const ParamMap& given) {
  ParamMap params;
  const std::vector<ParamSpec> specs = pass.params();
  for (const ParamSpec& spec : specs) params[spec.name] = spec.default_value;
  for (const auto& [key, value] : given) {
    auto it = params.find(key);
    if (it == params.end()) {
      throw UserError("pass '" + std::string(pass.name()) + "': unknown parameter '" + key + "'");
    }
    if (it->second.index() != value.index()) {
      throw UserError("pass '" + std::string(pass.name()) + "': parameter '" + key +
                      "' has the wrong type (" + format_value(value) + ")");
    }
    it->second = value;
  }
  return params;
}

}  // namespace

void run_pipeline(ir::Graph& graph, const PipelineConfig& config) {
  // A broken input is the caller's mistake, not a pass's: report it before any pass runs.
  ir::verify(graph);
  for (const PassInvocation& invocation : config.passes) {
    const Pass* pass = find_pass(invocation.name);
    if (pass == nullptr) throw UserError("unknown pass '" + invocation.name + "'");
    if (!pass->applies_to(config.target)) {
      throw UserError("pass '" + invocation.name + "' does not apply to target " + config.target +
                      " (it applies to: " + applicable_targets(*pass) + ")");
    }
    pass->run(graph, resolve_params(*pass, invocation.params));
    try {
      ir::verify(graph);
    } catch (const UserError& e) {
      CUVIL_CHECK(false, "pass '" + invocation.name + "' left an invalid graph: " + e.what());
    }
  }
}

Compiled compile(ir::Graph graph, const PipelineConfig& config, int threads) {
  run_pipeline(graph, config);
  LowerOptions options;
  options.threads = threads;
  options.target = config.target;
  runtime::Plan plan = lower(graph, options);
  return Compiled{std::move(graph), std::move(plan)};
}

}  // namespace cuvil::passes
