// cuvil-tune-gen --confirm and --sensitivity: the keep-or-not rule on synthetic samples, the
// one-step neighbours of a made-up space, and side-by-side measurement on a scaled-down graph.
#include <gtest/gtest.h>

#include "base/error.h"
#include "bench_suite/suites.h"
#include "passes/pass.h"
#include "tuner/confirm.h"
#include "tuner/search_space.h"
#include "tuner/sensitivity.h"
#include "tuner/side_by_side.h"
#include "tuner/space_file.h"

namespace cuvil::tuner {
namespace {

using passes::Scale;

// 17 samples spread +-1.5% around `ms`.
std::vector<RungSamples> samples(double ms, const std::string& rung = "b1") {
  RungSamples r;
  r.name = rung;
  for (int i = 0; i < 17; ++i) r.samples_ns.push_back(ms * 1e6 * (1 + 0.03 * (i - 8) / 16.0));
  r.median_ms = ms;
  return {r};
}

TEST(TimeRatio, RatioOfMediansWithAnIntervalAndAPValue) {
  const TimeRatio r = time_ratio(samples(20), samples(10));
  EXPECT_NEAR(r.ratio, 0.5, 1e-9);
  EXPECT_LE(r.low, 0.5);
  EXPECT_GE(r.high, 0.5);
  EXPECT_GT(r.low, 0.45);
  EXPECT_LT(r.p_value, 1e-4);  // 17 against 17, no overlap
}

TEST(TimeRatio, SameSamplesHaveRatioOneAndNoSignificance) {
  const TimeRatio r = time_ratio(samples(7), samples(7));
  EXPECT_DOUBLE_EQ(r.ratio, 1.0);
  EXPECT_GT(r.p_value, 0.5);
}

TEST(Confirm, PrunedWithinToleranceIsKept) {
  const ConfirmResult r = decide(samples(30), samples(20), samples(20.2), true, "", 0.02);
  EXPECT_TRUE(r.keep_pruned);
  EXPECT_NEAR(r.pruned_vs_full.ratio, 1.01, 1e-9);
  EXPECT_NEAR(r.chosen_vs_default.ratio, 20.2 / 30, 1e-9);
  EXPECT_NE(r.decision.find("pruned configuration is written"), std::string::npos);
}

TEST(Confirm, PrunedBeyondToleranceFallsBackToTheFullBest) {
  const ConfirmResult r = decide(samples(30), samples(20), samples(21), true, "", 0.02);
  EXPECT_FALSE(r.keep_pruned);
  EXPECT_NEAR(r.pruned_vs_full.ratio, 1.05, 1e-9);
  EXPECT_NEAR(r.chosen_vs_default.ratio, 20.0 / 30, 1e-9);
  EXPECT_NE(r.decision.find("+5.00%"), std::string::npos);
  EXPECT_NE(r.decision.find("full best configuration is written"), std::string::npos);
}

TEST(Confirm, AWiderToleranceKeepsTheSamePrunedConfiguration) {
  EXPECT_TRUE(decide(samples(30), samples(20), samples(21), true, "", 0.06).keep_pruned);
}

TEST(Confirm, FailedPrunedConfigurationIsNotKept) {
  const ConfirmResult r = decide(samples(30), samples(20), {}, true, "wrong result", 0.5);
  EXPECT_FALSE(r.keep_pruned);
  EXPECT_NE(r.decision.find("wrong result"), std::string::npos);
}

TEST(Confirm, NothingResetMeansTheFullBestWithoutAPrunedRatio) {
  const ConfirmResult r = decide(samples(30), samples(20), samples(20), false, "", 0.02);
  EXPECT_FALSE(r.keep_pruned);
  const nlohmann::json j = confirm_to_json(r);
  EXPECT_FALSE(j.contains("pruned_vs_full"));
  EXPECT_EQ(j["written"], "full");
  EXPECT_NEAR(j["written_over_default"]["speedup"].get<double>(), 1.5, 1e-9);
  // The speedup interval is the time ratio's, inverted: its ends swap.
  EXPECT_LE(j["written_over_default"]["ci95"][0].get<double>(), 1.5);
  EXPECT_GE(j["written_over_default"]["ci95"][1].get<double>(), 1.5);
}

TEST(Confirm, NegativeToleranceIsAnError) {
  EXPECT_THROW(decide(samples(30), samples(20), samples(20), true, "", -0.01), UserError);
}

// One pass of every kind of parameter, and a second pass that is switched off in `best`.
SearchSpace two_pass_space() {
  std::vector<PassSchema> schemas = {
      {"tiling",
       {passes::int_param("mr", 1, 16, 4, ""), passes::int_param("mc", 4, 256, 64, ""),
        passes::int_param("block", 8, 1024, 64, "", Scale::log),
        passes::int_param("unroll", 1, 7, 7, ""),
        passes::choice_param("mode", {"a", "b", "c"}, "b", ""),
        passes::bool_param("prepack", true, "")}},
      {"extra", {passes::int_param("depth", 0, 8, 2, "")}},
  };
  SearchSpace space = derive_space(schemas, "cpu");
  narrow_space(space,
               "passes:\n  tiling:\n    params:\n      mc: { multiple_of: mr, factor_min: 1, "
               "factor_max: 32 }\n      mr: { min: 2, max: 16, power_of_two: true }\n",
               "toy.yaml", "");
  return space;
}

std::vector<std::string> moves_of(const std::vector<Neighbour>& all, const std::string& param) {
  std::vector<std::string> out;
  for (const Neighbour& n : all) {
    if (n.param == param) out.push_back(n.move + ":" + n.to.dump());
  }
  return out;
}

TEST(Sensitivity, EachParameterMovesOneStepOnItsOwnScale) {
  const SearchSpace space = two_pass_space();
  nlohmann::json best = default_values(space);
  best["tiling.mr"] = 8;
  best["tiling.mc"] = 24;
  best["extra"] = false;
  const std::vector<Neighbour> n = one_step_neighbours(space, best);
  using V = std::vector<std::string>;
  EXPECT_EQ(moves_of(n, "tiling.mr"), (V{"up:16", "down:4"}));       // power of two
  EXPECT_EQ(moves_of(n, "tiling.mc"), (V{"up:32", "down:16"}));      // one base (mr = 8)
  EXPECT_EQ(moves_of(n, "tiling.block"), (V{"up:128", "down:32"}));  // log scale
  EXPECT_EQ(moves_of(n, "tiling.unroll"), (V{"down:6"}));            // at its max: down only
  EXPECT_EQ(moves_of(n, "tiling.mode"), (V{"other:\"a\"", "other:\"c\""}));
  EXPECT_EQ(moves_of(n, "tiling.prepack"), (V{"flip:false"}));
  EXPECT_EQ(moves_of(n, "extra"), (V{"flip:true"}));  // a switch flips either way
  EXPECT_TRUE(moves_of(n, "extra.depth").empty());    // its pass is off
  for (const Neighbour& x : n) {
    // Exactly one value differs from the best.
    int changed = 0;
    for (const auto& [k, v] : best.items()) changed += x.values[k] != v;
    EXPECT_EQ(changed, 1) << x.param;
  }
}

TEST(Sensitivity, FixedDimensionsAreNotMoved) {
  SearchSpace space = two_pass_space();
  narrow_space(space, "passes:\n  tiling:\n    params:\n      block: { fixed: 64 }\n", "t.yaml",
               "");
  const std::vector<Neighbour> n = one_step_neighbours(space, default_values(space));
  EXPECT_TRUE(moves_of(n, "tiling.block").empty());
}

TEST(Sensitivity, RowsPrintAndSerialiseFailuresAndRatios) {
  SensitivityRow ok;
  ok.neighbour = {"tiling.mr", "up", 8, 16, {}};
  ok.ratio = time_ratio(samples(10), samples(12));
  SensitivityRow bad;
  bad.neighbour = {"tiling.mode", "other", "b", "a", {}};
  bad.failure = "wrong result (max rel err 0.5 > 1e-04)";
  const nlohmann::json j = sensitivity_to_json({ok, bad});
  EXPECT_EQ(j[0]["verdict"], "slower");
  EXPECT_NEAR(j[0]["time_ratio"].get<double>(), 1.2, 1e-9);
  EXPECT_EQ(j[1]["failure"], bad.failure);
  const std::string table = format_sensitivity({ok, bad});
  EXPECT_NE(table.find("8 -> 16"), std::string::npos);
  EXPECT_NE(table.find("failed: wrong result"), std::string::npos);
}

TEST(SideBySide, InterleavesRoundsOfEveryConfigurationOnAScaledDownGraph) {
  const bench::Suite& suite = bench::find_suite("resnet50");
  SideBySideOptions o;
  o.suite = suite;
  o.rungs = bench::select_rungs(bench::load_suite_ladder(suite), "b1");
  o.rounds = 3;
  o.samples_per_round = 2;
  o.warmup_runs = 1;
  o.tiny = true;
  const SearchSpace space = space_from_registry("cpu");
  nlohmann::json other = default_values(space);
  other["layout.memory_layout"] = "nchw";
  const std::vector<passes::PipelineConfig> configs = {
      config_from_values(space, default_values(space), suite.name),
      config_from_values(space, other, suite.name)};
  const SideBySideResult r = measure_side_by_side_isolated(configs, o);
  ASSERT_EQ(r.failure.size(), 2u);
  EXPECT_EQ(r.failure[0], "");
  EXPECT_EQ(r.failure[1], "");
  ASSERT_EQ(r.rungs[1].size(), 1u);
  EXPECT_EQ(r.rungs[1][0].name, "b1");
  EXPECT_EQ(r.rungs[0][0].samples_ns.size(), 6u);
  EXPECT_EQ(r.rungs[1][0].samples_ns.size(), 6u);
  EXPECT_GT(r.rungs[1][0].median_ms, 0);
}

TEST(SideBySide, ZeroRoundsIsAnError) {
  SideBySideOptions o;
  o.suite = bench::find_suite("resnet50");
  o.rungs = {bench::Rung{}};
  o.rounds = 0;
  EXPECT_THROW(measure_side_by_side({passes::PipelineConfig{}}, o), UserError);
}

TEST(SideBySide, AFailingMeasurementFailsEveryConfigurationWithItsReason) {
  SideBySideOptions o;
  o.suite = bench::find_suite("resnet50");
  o.rungs = {bench::Rung{}};
  o.rungs[0].name = "broken";
  o.rungs[0].params["batch"] = 0;  // the builder rejects it inside the child process
  o.tiny = true;
  o.verify = false;
  const SideBySideResult r = measure_side_by_side_isolated({passes::PipelineConfig{}}, o);
  ASSERT_EQ(r.failure.size(), 1u);
  EXPECT_FALSE(r.failure[0].empty());
}

}  // namespace
}  // namespace cuvil::tuner
