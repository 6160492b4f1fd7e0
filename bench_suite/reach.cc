#include "bench_suite/reach.h"

#include <mutex>

#include "base/error.h"
#include "passes/pipeline.h"
#include "passes/registry.h"
#include "runtime/executor.h"

namespace cuvil::bench {

std::vector<std::string> registered_knobs(const std::string& target) {
  std::vector<std::string> knobs;
  for (const auto& pass : passes::pass_registry()) {
    if (!pass->applies_to(target)) continue;
    for (const passes::ParamSpec& p : pass->params()) {
      knobs.push_back(std::string(pass->name()) + "." + p.name);
    }
  }
  return knobs;
}

namespace {

// `base` with one choice or boolean parameter changed, for every other value it can take.
std::vector<std::pair<std::string, passes::PipelineConfig>> variants(
    const passes::PipelineConfig& base) {
  std::vector<std::pair<std::string, passes::PipelineConfig>> out = {{"", base}};
  for (size_t i = 0; i < base.passes.size(); ++i) {
    const passes::Pass* pass = passes::find_pass(base.passes[i].name);
    if (pass == nullptr) continue;
    for (const passes::ParamSpec& spec : pass->params()) {
      auto given = base.passes[i].params.find(spec.name);
      const passes::ParamValue current =
          given == base.passes[i].params.end() ? spec.default_value : given->second;
      std::vector<passes::ParamValue> others;
      if (spec.type == passes::ParamSpec::Type::boolean) {
        others.push_back(!std::get<bool>(current));
      } else if (spec.type == passes::ParamSpec::Type::choice) {
        for (const std::string& c : spec.choices) {
          if (c != std::get<std::string>(current)) others.push_back(c);
        }
      }
      for (const passes::ParamValue& v : others) {
        passes::PipelineConfig c = base;
        c.passes[i].params[spec.name] = v;
        out.emplace_back(base.passes[i].name + "." + spec.name + "=" + passes::format_value(v),
                         std::move(c));
      }
    }
  }
  return out;
}

}  // namespace

RungReach knob_reach(const Suite& suite, const Rung& rung, const passes::PipelineConfig& base,
                     int threads) {
  if (base.target != "cpu") throw UserError("knob reach is recorded for the cpu target only");
  // Deterministic for its inputs: kept for the process (tune-gen and tests ask again).
  std::string params;
  for (const auto& [k, v] : rung.params) params += "," + k + "=" + std::to_string(v);
  const std::string key = suite.name + "|" + suite.model_sha256 + "|" + rung.name + params + "|" +
                          passes::config_hash(base) + "|" + std::to_string(threads);
  static std::mutex cache_mutex;
  static std::map<std::string, RungReach> cache;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  RungReach reach;
  reach.rung = rung.name;
  const ir::Graph measured = suite.build(rung, /*tiny=*/false);
  const ir::Graph tiny = suite.build(rung, /*tiny=*/true);
  const std::vector<ir::Tensor> inputs = ir::random_inputs(tiny, 1);
  for (const auto& [variant, config] : variants(base)) {
    passes::Compiled compiled;
    try {
      const passes::Pins pins = passes::resolve_pins(measured, config, threads);
      compiled = passes::compile(tiny, config, threads, &pins);
    } catch (const UserError&) {
      continue;  // a combination this graph cannot run (the tuner's trial would fail too)
    }
    runtime::Executor executor(std::move(compiled.plan));
    executor.run(inputs);  // completes Step::reach with what kernels read as they run
    ++reach.configs;
    std::map<std::string, std::map<std::string, int>> found;
    for (const runtime::Step& s : executor.plan().steps) {
      for (const std::string& knob : s.reach) ++found[knob][s.kernel];
    }
    for (const std::string& knob : executor.plan().reach) found[knob];  // no kernels: plan-wide
    for (auto& [knob, kernels] : found) {
      if (reach.reaches(knob)) continue;
      if (!variant.empty()) reach.only_under[knob] = variant;
      if (kernels.empty()) {
        reach.plan_wide.insert(knob);
      } else {
        reach.steps.emplace(knob, std::move(kernels));
      }
    }
  }
  std::lock_guard<std::mutex> lock(cache_mutex);
  cache[key] = reach;
  return reach;
}

}  // namespace cuvil::bench
