#include "bench_suite/verify.h"

#include <random>

#include "bench_suite/cuda_target.h"
#include "passes/pipeline.h"
#include "passes/reduced_precision.h"
#include "passes/registry.h"
#include "runtime/executor.h"
#include "runtime/reference/interpreter.h"

namespace cuvil::bench {

bool VerifyResult::ok() const {
  for (const OutputCheck& o : outputs) {
    if (!o.ok) return false;
  }
  return !outputs.empty();
}

ReferenceRun run_reference(const ir::Graph& graph, uint64_t seed) {
  ReferenceRun run;
  run.seed = seed;
  run.inputs = ir::random_inputs(graph, seed);
  run.expected = runtime::reference::interpret(graph, run.inputs);
  return run;
}

namespace {

// The reference's outputs with every float input element scaled by (1 + u * relative), u
// uniform in [-1, 1] (a fixed stream per seed); integer inputs (ids, masks) stay as they are.
const std::vector<ir::Tensor>& perturbed_reference(const ir::Graph& graph,
                                                   const ReferenceRun& reference, double relative) {
  auto it = reference.perturbed.find(relative);
  if (it != reference.perturbed.end()) return it->second;
  std::vector<ir::Tensor> inputs = reference.inputs;
  std::mt19937_64 rng(reference.seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (ir::Tensor& t : inputs) {
    if (t.dtype != ir::DType::f32) continue;
    for (float& v : t.data) v = static_cast<float>(v * (1.0 + u(rng) * relative));
  }
  return reference.perturbed[relative] = runtime::reference::interpret(graph, inputs);
}

}  // namespace

bool covered_by_spread(double max_relative_error, double reference_spread, double tolerance) {
  return reference_spread > tolerance &&
         max_relative_error <= kIllConditionedFactor * reference_spread;
}

VerifyResult verify_graph(const ir::Graph& graph, const passes::PipelineConfig& config, int threads,
                          uint64_t seed, const std::string& label, const passes::Pins* pins) {
  return verify_graph(graph, run_reference(graph, seed), config, threads, label, pins);
}

VerifyResult verify_graph(const ir::Graph& graph, const ReferenceRun& reference,
                          const passes::PipelineConfig& config, int threads,
                          const std::string& label, const passes::Pins* pins) {
  const std::vector<ir::Tensor>& inputs = reference.inputs;
  const std::vector<ir::Tensor>& expected = reference.expected;
  passes::Compiled compiled = passes::compile(graph, config, threads, pins);
  VerifyResult result;
  for (const runtime::Step& s : compiled.plan.steps) ++result.kernels[s.kernel];
  if (auto it = compiled.graph.annotations.find("pins.applied");
      it != compiled.graph.annotations.end()) {
    result.pinned = it->second;
  }
  std::vector<ir::Tensor>& actual = result.actual;
  if (config.target == "cuda") {
    actual = run_on_cuda(std::move(compiled.plan), inputs);
  } else {
    runtime::Executor executor(std::move(compiled.plan));
    actual = executor.run(inputs);
  }
  result.label = label;
  result.tolerance = passes::precision_tolerance(config);
  for (size_t i = 0; i < expected.size(); ++i) {
    OutputCheck check;
    check.name = graph.value(graph.outputs()[i]).name;
    check.max_relative_error = ir::max_relative_error(actual[i], expected[i]);
    check.ok = check.max_relative_error <= result.tolerance;
    if (!check.ok) {
      const std::vector<ir::Tensor>& moved =
          perturbed_reference(graph, reference, kConditioningPerturbation * result.tolerance);
      check.reference_spread = ir::max_relative_error(moved[i], expected[i]);
      check.ill_conditioned =
          covered_by_spread(check.max_relative_error, check.reference_spread, result.tolerance);
      check.ok = check.ill_conditioned;
    }
    result.outputs.push_back(check);
  }
  return result;
}

VerifyResult verify_scaled_down(const Suite& suite, const Rung& rung,
                                const passes::PipelineConfig& config, int threads, uint64_t seed,
                                const std::string& label) {
  const passes::Pins pins =
      passes::resolve_pins(suite.build(rung, /*tiny=*/false), config, threads);
  return verify_graph(suite.build(rung, /*tiny=*/true), config, threads, seed, label, &pins);
}

std::vector<std::pair<std::string, passes::PipelineConfig>> pass_variants(
    const passes::PipelineConfig& config) {
  std::vector<std::pair<std::string, passes::PipelineConfig>> variants;
  variants.push_back({"config", config});
  passes::PipelineConfig none = config;
  none.passes.clear();
  variants.push_back({"no passes", none});
  const passes::PipelineConfig all = passes::default_pipeline(config.target);
  for (const passes::PassInvocation& p : all.passes) {
    passes::PipelineConfig alone = none;
    alone.passes.push_back(p);
    variants.push_back({"only " + p.name, alone});
  }
  for (size_t i = 0; i < config.passes.size(); ++i) {
    passes::PipelineConfig without = config;
    without.passes.erase(without.passes.begin() + static_cast<std::ptrdiff_t>(i));
    variants.push_back({"without " + config.passes[i].name, without});
  }
  return variants;
}

}  // namespace cuvil::bench
