#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "passes/cuvilpass.h"
#include "passes/random_config.h"
#include "passes/registry.h"

namespace cuvil::passes {
namespace {

bool in_range(const ParamSpec& spec, const ParamValue& v) {
  switch (spec.type) {
    case ParamSpec::Type::integer: {
      const int64_t x = std::get<int64_t>(v);
      return x >= spec.int_min && x <= spec.int_max;
    }
    case ParamSpec::Type::real: {
      const double x = std::get<double>(v);
      return x >= spec.real_min && x <= spec.real_max;
    }
    case ParamSpec::Type::boolean:
      return std::holds_alternative<bool>(v);
    case ParamSpec::Type::choice: {
      const std::string& x = std::get<std::string>(v);
      return std::find(spec.choices.begin(), spec.choices.end(), x) != spec.choices.end();
    }
  }
  return false;
}

TEST(RandomConfig, EveryDrawIsValidAndSurvivesTheFileFormat) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const PipelineConfig c = random_pipeline("cpu", seed);
    for (const PassInvocation& inv : c.passes) {
      const Pass* pass = find_pass(inv.name);
      ASSERT_NE(pass, nullptr) << inv.name;
      for (const ParamSpec& spec : pass->params()) {
        ASSERT_TRUE(inv.params.count(spec.name)) << spec.name;
        EXPECT_TRUE(in_range(spec, inv.params.at(spec.name))) << inv.name << "." << spec.name;
      }
    }
    // The loader validates ranges and types: a random draw must load back unchanged.
    const PipelineConfig back = parse_cuvilpass(to_yaml(c), "random.cuvilpass");
    EXPECT_EQ(config_hash(back), config_hash(c)) << "seed " << seed;
  }
}

TEST(RandomConfig, ReachesEveryPassAndEveryChoice) {
  std::set<std::string> seen;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    for (const PassInvocation& inv : random_pipeline("cpu", seed).passes) {
      seen.insert(inv.name);
      for (const auto& [name, value] : inv.params) {
        if (auto* s = std::get_if<std::string>(&value))
          seen.insert(inv.name + "." + name + "=" + *s);
      }
    }
  }
  for (const auto& pass : pass_registry()) {
    if (!pass->applies_to("cpu")) continue;
    EXPECT_TRUE(seen.count(std::string(pass->name()))) << pass->name();
    for (const ParamSpec& spec : pass->params()) {
      for (const std::string& choice : spec.choices) {
        EXPECT_TRUE(seen.count(std::string(pass->name()) + "." + spec.name + "=" + choice))
            << pass->name() << "." << spec.name << "=" << choice;
      }
    }
  }
}

TEST(RandomConfig, IsDeterministicInSeed) {
  EXPECT_EQ(config_hash(random_pipeline("cpu", 5)), config_hash(random_pipeline("cpu", 5)));
  EXPECT_NE(config_hash(random_pipeline("cpu", 5)), config_hash(random_pipeline("cpu", 6)));
}

}  // namespace
}  // namespace cuvil::passes

namespace cuvil::passes {
namespace {

TEST(RandomConfig, ExcludedChoicesAreNeverDrawn) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    for (const PassInvocation& inv : random_pipeline("cpu", seed, {"int8", "nhwc"}).passes) {
      for (const auto& [name, value] : inv.params) {
        if (auto* s = std::get_if<std::string>(&value)) {
          EXPECT_NE(*s, "int8") << inv.name << "." << name;
          EXPECT_NE(*s, "nhwc") << inv.name << "." << name;
        }
      }
    }
  }
}

}  // namespace
}  // namespace cuvil::passes
