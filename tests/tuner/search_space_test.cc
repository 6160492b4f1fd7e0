#include <gtest/gtest.h>

#include "base/error.h"
#include "tuner/search_space.h"
#include "tuner/space_file.h"

namespace cuvil::tuner {
namespace {

using passes::ParamSpec;

// A registry-like list: one pass with every parameter kind, one without parameters.
std::vector<PassSchema> toy_registry() {
  ParamSpec tile;
  tile.name = "tile";
  tile.type = ParamSpec::Type::integer;
  tile.int_min = 1;
  tile.int_max = 17;
  tile.default_value = int64_t{4};
  ParamSpec block = tile;
  block.name = "block";
  block.int_min = 1;
  block.int_max = 512;
  block.log_scale = true;
  block.default_value = int64_t{64};
  ParamSpec ratio;
  ratio.name = "ratio";
  ratio.type = ParamSpec::Type::real;
  ratio.real_min = 0.1;
  ratio.real_max = 7.0;
  ratio.default_value = 1.0;
  ParamSpec flag;
  flag.name = "flag";
  flag.type = ParamSpec::Type::boolean;
  flag.default_value = true;
  ParamSpec mode;
  mode.name = "mode";
  mode.type = ParamSpec::Type::choice;
  mode.choices = {"a", "b", "c"};
  mode.default_value = std::string("b");
  return {{"toy", {tile, block, ratio, flag, mode}}, {"plain", {}}};
}

TEST(SearchSpace, EveryPassIsASwitchAndEveryParameterIsConditionalOnIt) {
  const SearchSpace s = derive_space(toy_registry(), "cpu");
  ASSERT_EQ(s.dims.size(), 7u);
  EXPECT_EQ(s.pass_order, (std::vector<std::string>{"toy", "plain"}));
  const Dimension* on = s.find("toy");
  ASSERT_NE(on, nullptr);
  EXPECT_TRUE(on->is_switch());
  EXPECT_EQ(on->kind, Dimension::Kind::boolean);
  const Dimension* block = s.find("toy.block");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->condition, "toy");
  EXPECT_TRUE(block->log_scale);
  EXPECT_EQ(block->int_max, 512);
  EXPECT_EQ(s.find("toy.mode")->choices.size(), 3u);
  EXPECT_EQ(s.find("toy.ratio")->kind, Dimension::Kind::real);
  EXPECT_TRUE(s.find("plain")->is_switch());
}

TEST(SearchSpace, JsonCarriesRangesConditionsAndDefaults) {
  const nlohmann::json j = space_to_json(derive_space(toy_registry(), "cpu"));
  ASSERT_EQ(j.size(), 7u);
  EXPECT_EQ(j[2]["name"], "toy.block");
  EXPECT_EQ(j[2]["kind"], "int");
  EXPECT_EQ(j[2]["low"], 1);
  EXPECT_EQ(j[2]["high"], 512);
  EXPECT_EQ(j[2]["log"], true);
  EXPECT_EQ(j[2]["condition"], "toy");
  EXPECT_EQ(j[5]["choices"].size(), 3u);
  EXPECT_EQ(j[5]["default"], "b");
}

TEST(SearchSpace, RegistrySpaceHasEveryRegisteredPass) {
  const SearchSpace s = space_from_registry("cpu");
  EXPECT_FALSE(s.pass_order.empty());
  for (const std::string& pass : s.pass_order) EXPECT_NE(s.find(pass), nullptr) << pass;
  // The default values give the default pipeline.
  const passes::PipelineConfig c = config_from_values(s, default_values(s), "resnet50");
  EXPECT_EQ(passes::config_hash(c), passes::config_hash(passes::default_pipeline("cpu")));
}

TEST(SearchSpace, PassesNotTunedByDefaultStayOnAtTheirDefaults) {
  std::vector<PassSchema> schemas = toy_registry();
  schemas[0].tuned = false;
  const SearchSpace s = derive_space(schemas, "cpu");
  ASSERT_TRUE(s.find("toy")->fixed.has_value());
  EXPECT_TRUE(std::get<bool>(*s.find("toy")->fixed));
  EXPECT_EQ(std::get<int64_t>(*s.find("toy.block")->fixed), 64);
  for (const Dimension* d : s.searched()) EXPECT_NE(d->pass, "toy") << d->name;
  // recognize-patterns is such a pass: the rewrites are always worth running.
  EXPECT_TRUE(space_from_registry("cpu").find("recognize-patterns")->fixed.has_value());
  // A space file opens it again.
  SearchSpace opened = derive_space(schemas, "cpu");
  narrow_space(opened, "passes:\n  toy: { enabled: tune }\n", "space.yaml", "");
  EXPECT_FALSE(opened.find("toy")->fixed.has_value());
}

TEST(SearchSpace, ParametersOfAnotherTargetAreFixedAtTheirDefault) {
  // layout.blocked_convs runs on the CPU only (no nchw16c kernels on CUDA).
  const SearchSpace cpu = space_from_registry("cpu");
  const SearchSpace cuda = space_from_registry("cuda");
  ASSERT_NE(cpu.find("layout.blocked_convs"), nullptr);
  ASSERT_NE(cuda.find("layout.blocked_convs"), nullptr);
  EXPECT_FALSE(cpu.find("layout.blocked_convs")->fixed.has_value());
  ASSERT_TRUE(cuda.find("layout.blocked_convs")->fixed.has_value());
  EXPECT_EQ(std::get<std::string>(*cuda.find("layout.blocked_convs")->fixed), "none");
  EXPECT_FALSE(cuda.find("layout.memory_layout")->fixed.has_value());
}

TEST(SearchSpace, NarrowingRangesChoicesAndFixing) {
  SearchSpace s = derive_space(toy_registry(), "cpu");
  narrow_space(s,
               "suite: x\n"
               "passes:\n"
               "  toy:\n"
               "    params:\n"
               "      tile: { min: 2, max: 7 }\n"
               "      mode: { choices: [a, c] }\n"
               "      flag: { fixed: false }\n"
               "  plain: { enabled: false }\n",
               "space.yaml", "x");
  EXPECT_EQ(s.find("toy.tile")->int_min, 2);
  EXPECT_EQ(s.find("toy.tile")->int_max, 7);
  EXPECT_EQ(s.find("toy.mode")->choices, (std::vector<std::string>{"a", "c"}));
  // The baseline stays inside the narrowed choices.
  EXPECT_EQ(std::get<std::string>(s.find("toy.mode")->default_value), "a");
  ASSERT_TRUE(s.find("toy.flag")->fixed.has_value());
  EXPECT_FALSE(std::get<bool>(*s.find("toy.flag")->fixed));
  EXPECT_FALSE(std::get<bool>(*s.find("plain")->fixed));
  EXPECT_EQ(s.searched().size(), 5u);  // toy, tile, block, ratio, mode
}

TEST(SearchSpace, ConstraintsAreExpressedInTheSpace) {
  SearchSpace s = derive_space(toy_registry(), "cpu");
  narrow_space(s,
               "passes:\n"
               "  toy:\n"
               "    params:\n"
               "      block: { multiple_of: tile, factor_min: 2, factor_max: 16 }\n",
               "space.yaml", "");
  const nlohmann::json j = space_to_json(s);
  EXPECT_EQ(j[2]["multiple_of"], "toy.tile");
  EXPECT_EQ(j[2]["factor_low"], 2);
  EXPECT_EQ(j[2]["factor_high"], 16);
  SearchSpace p = derive_space(toy_registry(), "cpu");
  narrow_space(
      p, "passes:\n  toy:\n    params:\n      block: { min: 3, max: 100, power_of_two: true }\n",
      "space.yaml", "");
  EXPECT_TRUE(space_to_json(p)[2]["power_of_two"]);
  EXPECT_EQ(std::get<int64_t>(p.find("toy.block")->default_value), 64);
}

TEST(SearchSpace, FreezeFixesEveryParameterAtItsDefault) {
  SearchSpace s = derive_space(toy_registry(), "cpu");
  narrow_space(s, "passes:\n  toy: { freeze: true }\n", "space.yaml", "");
  EXPECT_EQ(s.searched().size(), 1u);  // only plain's switch
}

void expect_error(const std::string& yaml, const std::string& fragment) {
  SearchSpace s = derive_space(toy_registry(), "cpu");
  try {
    narrow_space(s, yaml, "bad.yaml", "x");
    FAIL() << "accepted: " << yaml;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// The baseline trial must be the default: block's default 64 is 16 x tile's 4.
TEST(SearchSpaceFile, MultipleOfThatCannotExpressTheDefault) {
  expect_error("passes:\n  toy:\n    params:\n      block: { multiple_of: tile, factor_max: 9 }\n",
               "cannot give the default 64");
}

TEST(SearchSpaceFile, APassListedTwice) {
  expect_error("passes:\n  toy: { enabled: true }\n  toy: { freeze: true }\n",
               "bad.yaml:3: toy: given twice");
}

TEST(SearchSpaceFile, ASecondYamlDocument) {
  expect_error("passes:\n  toy: { enabled: true }\n---\npasses: {}\n", "a second YAML document");
}

TEST(SearchSpaceFile, MalformedYamlNamesFileAndLine) {
  expect_error("passes:\n  toy: [\n", "bad.yaml:");
}
TEST(SearchSpaceFile, UnknownPass) {
  expect_error("passes:\n  tyo: { enabled: true }\n", "bad.yaml:2: passes.tyo: unknown pass");
}
TEST(SearchSpaceFile, UnknownParameter) {
  expect_error("passes:\n  toy:\n    params:\n      tiles: { min: 1 }\n",
               "bad.yaml:4: passes.toy.params.tiles: unknown parameter");
}
TEST(SearchSpaceFile, RangeOutsideTheRegistry) {
  expect_error("passes:\n  toy:\n    params:\n      tile: { max: 18 }\n", "outside the registry");
}
TEST(SearchSpaceFile, MinAboveMax) {
  expect_error("passes:\n  toy:\n    params:\n      tile: { min: 7, max: 3 }\n",
               "min is above max");
}
TEST(SearchSpaceFile, ChoiceNotInRegistry) {
  expect_error("passes:\n  toy:\n    params:\n      mode: { choices: [a, z] }\n",
               "'z' is not one of");
}
TEST(SearchSpaceFile, WrongTypeForFixed) {
  expect_error("passes:\n  toy:\n    params:\n      flag: { fixed: yes }\n",
               "expected true or false");
}
TEST(SearchSpaceFile, KeyNotAllowedForTheType) {
  expect_error("passes:\n  toy:\n    params:\n      mode: { min: 1 }\n", "unknown key");
}
TEST(SearchSpaceFile, MultipleOfUnknownParameter) {
  expect_error("passes:\n  toy:\n    params:\n      block: { multiple_of: nope }\n",
               "not another integer parameter");
}
TEST(SearchSpaceFile, NoPowerOfTwoInRange) {
  expect_error("passes:\n  toy:\n    params:\n      tile: { min: 5, max: 7, power_of_two: true }\n",
               "no power of two");
}
TEST(SearchSpaceFile, SpaceForAnotherSuite) {
  expect_error("suite: sdxl\npasses: {}\n", "not 'x'");
}
TEST(SearchSpaceFile, UnknownTopLevelKey) {
  expect_error("pases: {}\n", "bad.yaml:1: pases");
}

TEST(SearchSpace, ValuesOfTheWrongTypeAreRejected) {
  const SearchSpace s = space_from_registry("cpu");
  nlohmann::json v = default_values(s);
  v["memory-plan.alignment"] = "sixty-four";
  EXPECT_THROW(config_from_values(s, v, "resnet50"), UserError);
}

TEST(SearchSpace, PassSwitchedOffLeavesThePipeline) {
  const SearchSpace s = space_from_registry("cpu");
  nlohmann::json v = default_values(s);
  v["memory-plan"] = false;
  const passes::PipelineConfig c = config_from_values(s, v, "resnet50");
  for (const auto& p : c.passes) EXPECT_NE(p.name, "memory-plan");
  EXPECT_EQ(c.passes.size(), s.pass_order.size() - 1);
}

}  // namespace
}  // namespace cuvil::tuner
