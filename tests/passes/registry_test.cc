#include "passes/registry.h"

#include <gtest/gtest.h>

#include <set>

namespace cuvil::passes {
namespace {

TEST(Registry, EveryPassHasNameAndSummary) {
  ASSERT_FALSE(pass_registry().empty());
  for (const auto& pass : pass_registry()) {
    EXPECT_FALSE(pass->name().empty());
    EXPECT_FALSE(pass->summary().empty()) << pass->name();
  }
}

TEST(Registry, NamesAreUnique) {
  std::set<std::string_view> names;
  for (const auto& pass : pass_registry()) EXPECT_TRUE(names.insert(pass->name()).second);
}

TEST(Registry, OrderIsTheDefaultPipeline) {
  std::vector<std::string_view> names;
  for (const auto& pass : pass_registry()) {
    if (pass->applies_to("cpu")) names.push_back(pass->name());
  }
  EXPECT_EQ(names, (std::vector<std::string_view>{
                       "recognize-patterns", "fold-batchnorm", "layout", "fuse-elementwise",
                       "select-lowering", "reduced-precision", "attention-tiling", "gemm-tiling",
                       "conv-tiling", "threading", "python-binding", "memory-plan"}));
}

TEST(Registry, FindsPassesByName) {
  for (const auto& pass : pass_registry()) EXPECT_EQ(find_pass(pass->name()), pass.get());
}

TEST(Registry, UnknownNameIsNull) {
  EXPECT_EQ(find_pass("no-such-pass"), nullptr);
}

TEST(Registry, ParameterDefaultsAreValid) {
  for (const auto& pass : pass_registry()) {
    std::set<std::string> seen;
    for (const ParamSpec& spec : pass->params()) {
      SCOPED_TRACE(std::string(pass->name()) + "." + spec.name);
      EXPECT_FALSE(spec.name.empty());
      EXPECT_FALSE(spec.help.empty());
      EXPECT_TRUE(seen.insert(spec.name).second);
      switch (spec.type) {
        case ParamSpec::Type::integer: {
          ASSERT_TRUE(std::holds_alternative<int64_t>(spec.default_value));
          const int64_t v = std::get<int64_t>(spec.default_value);
          EXPECT_LE(spec.int_min, spec.int_max);
          EXPECT_GE(v, spec.int_min);
          EXPECT_LE(v, spec.int_max);
          if (spec.log_scale) {
            EXPECT_GT(spec.int_min, 0);
          }
          break;
        }
        case ParamSpec::Type::real: {
          ASSERT_TRUE(std::holds_alternative<double>(spec.default_value));
          const double v = std::get<double>(spec.default_value);
          EXPECT_GE(v, spec.real_min);
          EXPECT_LE(v, spec.real_max);
          if (spec.log_scale) {
            EXPECT_GT(spec.real_min, 0);
          }
          break;
        }
        case ParamSpec::Type::boolean:
          EXPECT_TRUE(std::holds_alternative<bool>(spec.default_value));
          break;
        case ParamSpec::Type::choice: {
          ASSERT_TRUE(std::holds_alternative<std::string>(spec.default_value));
          EXPECT_GE(spec.choices.size(), 2u);
          const std::string& v = std::get<std::string>(spec.default_value);
          EXPECT_NE(std::find(spec.choices.begin(), spec.choices.end(), v), spec.choices.end());
          break;
        }
      }
    }
  }
}

TEST(Registry, TunableParametersAreDeclared) {
  auto has_param = [](const char* pass, const char* param) {
    for (const ParamSpec& spec : find_pass(pass)->params()) {
      if (spec.name == param) return true;
    }
    return false;
  };
  EXPECT_TRUE(has_param("fuse-elementwise", "max_fusion_depth"));
  EXPECT_TRUE(has_param("layout", "memory_layout"));
  EXPECT_TRUE(has_param("memory-plan", "strategy"));
  EXPECT_TRUE(has_param("memory-plan", "alignment"));
}

}  // namespace
}  // namespace cuvil::passes
