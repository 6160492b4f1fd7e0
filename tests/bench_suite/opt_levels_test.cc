// Optimisation levels: O2 is each suite's default pipeline, O0/O1/O3 the shared files under
// configs/opt/; every level compiles a suite and matches the reference within its bound.
#include <gtest/gtest.h>

#include "base/error.h"
#include "bench_suite/suites.h"
#include "bench_suite/verify.h"
#include "passes/cuvilpass.h"

namespace cuvil::bench {
namespace {

passes::PipelineConfig level(const std::string& name, const std::string& suite = "resnet50",
                             const std::string& target = "cpu") {
  return passes::load_cuvilpass(opt_level_config_path(find_suite(suite), target, name));
}

std::vector<std::string> pass_names(const passes::PipelineConfig& c) {
  std::vector<std::string> out;
  for (const auto& p : c.passes) out.push_back(p.name);
  return out;
}

TEST(OptLevels, O2IsTheSuitesDefaultPipeline) {
  for (const Suite& s : suites()) {
    EXPECT_EQ(opt_level_config_path(s, "cpu", "O2"), default_config_path(s, "cpu"));
  }
}

TEST(OptLevels, EachLevelAddsToTheOneBelow) {
  for (const char* target : {"cpu", "cuda"}) {
    const passes::PipelineConfig o0 = level("O0", "resnet50", target);
    const passes::PipelineConfig o1 = level("O1", "resnet50", target);
    const passes::PipelineConfig o2 = level("O2", "resnet50", target);
    EXPECT_TRUE(o0.passes.empty());
    const std::vector<std::string> n1 = pass_names(o1), n2 = pass_names(o2);
    ASSERT_LT(n1.size(), n2.size());
    EXPECT_EQ(n1, std::vector<std::string>(n2.begin(), n2.begin() + static_cast<long>(n1.size())));
    // O3 is O2's passes with bf16 products.
    EXPECT_EQ(pass_names(level("O3", "resnet50", target)), n2);
  }
  bool bf16 = false;
  for (const auto& p : level("O3").passes) {
    if (p.name == "reduced-precision") {
      bf16 = std::get<std::string>(p.params.at("conv_dtype")) == "bf16";
    }
  }
  EXPECT_TRUE(bf16);
}

TEST(OptLevels, UnknownLevelIsAUserError) {
  EXPECT_THROW(opt_level_config_path(find_suite("resnet50"), "cpu", "O4"), UserError);
}

TEST(OptLevels, EveryLevelMatchesTheReferenceWithinItsBound) {
  const Suite& suite = find_suite("resnet50");
  const Rung rung = select_rungs(load_suite_ladder(suite), "b1").at(0);
  const ir::Graph graph = suite.build(rung, /*tiny=*/true);
  for (const std::string& l : kOptLevels) {
    const VerifyResult r = verify_graph(graph, level(l), 2, 3, l);
    EXPECT_TRUE(r.ok()) << l;
  }
}

}  // namespace
}  // namespace cuvil::bench
