// Blocks of a run's samples: the cut, their medians and spread, and the permutation test of
// drift (a steady machine is not called drifting; a level shift is, early or mid-run).
#include "stats/blocks.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/splitmix64.h"

namespace cuvil::stats {
namespace {

// Timing-like samples: `level` plus skewed noise of 5% relative size.
std::vector<double> steady(SplitMix64& rng, int n, double level) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(level * (1 + 0.05 * -std::log(rng.uniform())));
  return out;
}

TEST(RunBlocks, FewerThanFourBlocksOfThreeIsNoCut) {
  EXPECT_EQ(run_block_count(11), 0u);
  EXPECT_EQ(run_block_count(12), kMinRunBlocks);
  EXPECT_EQ(run_block_count(20), 6u);
  EXPECT_EQ(run_block_count(100000), kRunBlocks);
}

TEST(BlockMedians, ContiguousPartsInOrderTheFirstOnesLonger) {
  // 10 samples in 3 blocks: 4, 3 and 3 samples, medians of each part in order.
  const std::vector<double> samples = {5, 1, 3, 2, 10, 20, 30, 7, 8, 9};
  EXPECT_EQ(block_medians(samples, 3), (std::vector<double>{2.5, 20, 8}));
  EXPECT_EQ(block_medians(samples, 10), samples);
}

TEST(BlockMedians, NoBlocksOrMoreBlocksThanSamplesGiveNone) {
  EXPECT_TRUE(block_medians({1, 2, 3}, 0).empty());
  EXPECT_TRUE(block_medians({1, 2, 3}, 4).empty());
}

TEST(SpreadPct, LargestOverSmallestMinusOne) {
  EXPECT_DOUBLE_EQ(spread_pct({100, 125, 110}), 25);
  EXPECT_DOUBLE_EQ(spread_pct({}), 0);
  EXPECT_TRUE(std::isinf(spread_pct({0, 1})));
}

TEST(BlockDrift, ALevelShiftMidRunIsDrift) {
  SplitMix64 rng{5};
  std::vector<double> samples = steady(rng, 100, 1e6);
  const std::vector<double> slower = steady(rng, 100, 1.2e6);
  samples.insert(samples.end(), slower.begin(), slower.end());
  const BlockDrift d = block_drift(samples);
  EXPECT_EQ(d.blocks, kRunBlocks);
  EXPECT_GT(d.spread_pct, 15);
  EXPECT_LT(d.p_value, 0.01);
}

TEST(BlockDrift, ANeighbourStartingEarlyInAShortRunIsDrift) {
  // A real 25-sample ResNet-50 run on a shared 2-core host (ms): 7 samples near 35, then 58. Its
  // interval had converged to +-0.70% around 57.9 ms.
  std::vector<double> samples = {37.3, 34.8, 37.3, 43.2, 32.7, 32.0, 37.2, 57.6, 58.3,
                                 65.5, 57.9, 57.5, 60.2, 58.6, 57.7, 57.9, 57.9, 58.7,
                                 60.7, 59.4, 58.3, 58.0, 58.8, 57.5, 58.3};
  const BlockDrift d = block_drift(samples);
  EXPECT_GT(d.spread_pct, 50);
  EXPECT_LT(d.p_value, 0.01);
}

TEST(BlockDrift, ASteadyMachineIsRarelyCalledDrifting) {
  // Over many steady runs the permutation p falls below 0.01 about 1% of the time.
  constexpr int kRuns = 200;
  int called = 0;
  for (int seed = 0; seed < kRuns; ++seed) {
    SplitMix64 rng{static_cast<uint64_t>(seed) * 31 + 7};
    called += block_drift(steady(rng, 60, 1e6), static_cast<uint64_t>(seed)).p_value < 0.01;
  }
  EXPECT_LE(called, 8);
}

TEST(BlockDrift, TooFewSamplesAreNotJudged) {
  const BlockDrift d = block_drift({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  EXPECT_EQ(d.blocks, 0u);
  EXPECT_EQ(d.p_value, 1);
}

TEST(BlockDrift, TheSameSamplesAndSeedGiveTheSameP) {
  SplitMix64 rng{9};
  const std::vector<double> samples = steady(rng, 40, 1e6);
  EXPECT_EQ(block_drift(samples, 3).p_value, block_drift(samples, 3).p_value);
}

}  // namespace
}  // namespace cuvil::stats
