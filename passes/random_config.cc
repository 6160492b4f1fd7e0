#include "passes/random_config.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "passes/registry.h"

namespace cuvil::passes {

namespace {

ParamValue draw(const ParamSpec& spec, std::mt19937_64& rng,
                const std::set<std::string>& excluded) {
  switch (spec.type) {
    case ParamSpec::Type::integer: {
      if (spec.log_scale && spec.int_min > 0) {
        std::uniform_real_distribution<double> u(std::log(static_cast<double>(spec.int_min)),
                                                 std::log(static_cast<double>(spec.int_max) + 1));
        const int64_t v = static_cast<int64_t>(std::floor(std::exp(u(rng))));
        return std::clamp(v, spec.int_min, spec.int_max);
      }
      return std::uniform_int_distribution<int64_t>(spec.int_min, spec.int_max)(rng);
    }
    case ParamSpec::Type::real: {
      if (spec.log_scale && spec.real_min > 0) {
        std::uniform_real_distribution<double> u(std::log(spec.real_min), std::log(spec.real_max));
        return std::clamp(std::exp(u(rng)), spec.real_min, spec.real_max);
      }
      return std::uniform_real_distribution<double>(spec.real_min, spec.real_max)(rng);
    }
    case ParamSpec::Type::boolean:
      return std::bernoulli_distribution(0.5)(rng);
    case ParamSpec::Type::choice: {
      std::vector<std::string> allowed;
      for (const std::string& c : spec.choices) {
        if (!excluded.count(c)) allowed.push_back(c);
      }
      if (allowed.empty()) allowed = spec.choices;
      std::uniform_int_distribution<size_t> pick(0, allowed.size() - 1);
      return allowed[pick(rng)];
    }
  }
  return spec.default_value;
}

}  // namespace

PipelineConfig random_pipeline(const std::string& target, uint64_t seed,
                               const std::set<std::string>& excluded_choices) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 17);
  PipelineConfig config;
  config.target = target;
  config.source = "<random seed " + std::to_string(seed) + ">";
  for (const auto& pass : pass_registry()) {
    if (!pass->applies_to(target)) continue;  // before the draw: other targets' passes cost none
    if (!std::bernoulli_distribution(0.5)(rng)) continue;
    PassInvocation inv;
    inv.name = std::string(pass->name());
    for (const ParamSpec& spec : pass->params())
      inv.params[spec.name] = draw(spec, rng, excluded_choices);
    config.passes.push_back(std::move(inv));
  }
  return config;
}

ParamMap random_params(const Pass& pass, uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 29);
  ParamMap params;
  for (const ParamSpec& spec : pass.params()) params[spec.name] = draw(spec, rng, {});
  return params;
}

}  // namespace cuvil::passes
