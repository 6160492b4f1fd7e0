// compare_runs: verdicts, the A/A false-positive rate over many deterministic seeds (independent
// samples, and runs whose machine drifts), shifts, the geometric mean, unmatched benchmarks and
// the regression gate.
#include "reports/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "base/splitmix64.h"
#include "stats/blocks.h"

namespace cuvil::reports {
namespace {

// A fixed generator, so the seeds give the same samples everywhere.
using Rng = cuvil::SplitMix64;

// Timing-like samples: a floor plus skewed (exponential) noise of `noise` relative size.
std::vector<double> timings(Rng& rng, int n, double median_ns, double noise) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(median_ns * (1 + noise * -std::log(rng.uniform())));
  return out;
}

BenchmarkSamples bench(const std::string& name, std::vector<double> real_ns) {
  BenchmarkSamples b;
  b.name = name;
  b.real_ns = std::move(real_ns);
  return b;
}

double false_positive_rate(int samples_per_side, const CompareOptions& options) {
  constexpr int kSeeds = 1000;
  int called_different = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    Rng rng{static_cast<uint64_t>(seed) * 7919 + 17};
    const auto a = timings(rng, samples_per_side, 1e6, 0.05);
    const auto b = timings(rng, samples_per_side, 1e6, 0.05);
    const Comparison c = compare_runs({bench("s/r", a)}, {bench("s/r", b)}, options);
    called_different += c.rows[0].verdict != Verdict::kSame;
  }
  return static_cast<double>(called_different) / kSeeds;
}

// A run on a machine whose speed wanders: `blocks` stretches of `per_block` samples, each at its
// own level (uniform within +-drift around the median), with small per-sample noise.
std::vector<double> drifting_run(Rng& rng, int blocks, int per_block, double median_ns,
                                 double drift) {
  std::vector<double> out;
  for (int b = 0; b < blocks; ++b) {
    const double level = median_ns * (1 + drift * (2 * rng.uniform() - 1));
    const auto stretch = timings(rng, per_block, level, 0.01);
    out.insert(out.end(), stretch.begin(), stretch.end());
  }
  return out;
}

// Of A/A comparisons between drifting runs, the fraction given a faster or slower verdict.
double drifting_false_verdict_rate(const CompareOptions& options) {
  constexpr int kSeeds = 400;
  int wrong = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    Rng rng{static_cast<uint64_t>(seed) * 104729 + 3};
    const auto a = drifting_run(rng, 8, 40, 1e6, 0.10);
    const auto b = drifting_run(rng, 8, 40, 1e6, 0.10);
    const Verdict v = compare_runs({bench("s/r", a)}, {bench("s/r", b)}, options).rows[0].verdict;
    wrong += v == Verdict::kFaster || v == Verdict::kSlower;
  }
  return static_cast<double>(wrong) / kSeeds;
}

TEST(Compare, RunsOfOneBuildOnADriftingMachineAreNotCalledDifferent) {
  // Pooled, 320 samples a side make every drift between the runs significant; the runs' blocks
  // keep the wrong verdicts near alpha.
  CompareOptions pooled;
  pooled.within_run_blocks = false;
  EXPECT_GT(drifting_false_verdict_rate(pooled), 0.5);
  EXPECT_LE(drifting_false_verdict_rate(CompareOptions{}), 0.05);
}

TEST(Compare, AChangeWithinARunsOwnDriftIsNoisyAndNamedInTheWarnings) {
  // The old run drifted from 1.0 to 1.2 ms for its last quarter; the new one sits at 1.13 ms
  // throughout: significantly above most old samples, but by less than the old run moved.
  std::vector<double> old_samples, new_samples;
  for (int i = 0; i < 40; ++i) {
    old_samples.push_back((i < 30 ? 1.0e6 : 1.2e6) + i);
    new_samples.push_back(1.13e6 + i);
  }
  const Comparison c =
      compare_runs({bench("s/r", old_samples)}, {bench("s/r", new_samples)}, CompareOptions{});
  const BenchmarkComparison& row = c.rows[0];
  EXPECT_TRUE(row.significant);
  EXPECT_EQ(row.blocks_old, stats::kRunBlocks);
  EXPECT_NEAR(row.drift_pct, 20, 0.1);
  EXPECT_EQ(row.verdict, Verdict::kNoisy);
  EXPECT_TRUE(regressions(c, 1).empty());
  const std::vector<std::string> lines = comparison_warnings(c);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("s/r"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("cannot tell"), std::string::npos) << lines[0];
  EXPECT_NE(format_comparison(c, "a", "b").find("1 noisy"), std::string::npos);
}

TEST(Compare, AChangeBeyondTheDriftKeepsItsVerdictAndFailsTheGate) {
  Rng rng{11};
  const auto old_samples = drifting_run(rng, 8, 30, 1e6, 0.01);
  const auto new_samples = drifting_run(rng, 8, 30, 1.1e6, 0.01);
  const Comparison c =
      compare_runs({bench("s/r", old_samples)}, {bench("s/r", new_samples)}, CompareOptions{});
  EXPECT_LT(c.rows[0].drift_pct, 3);
  EXPECT_LT(c.rows[0].blocks_p, 0.001);
  EXPECT_EQ(c.rows[0].verdict, Verdict::kSlower);
  EXPECT_EQ(regressions(c, 5).size(), 1u);
}

TEST(Compare, FewerSamplesThanFourBlocksAreTheirOwnUnits) {
  // Seven samples a side, 20% apart: no blocks, the pooled test decides.
  std::vector<double> a, b;
  for (int i = 0; i < 7; ++i) {
    a.push_back(1e6 + i);
    b.push_back(1.2e6 + i);
  }
  const BenchmarkComparison row =
      compare_runs({bench("s/r", a)}, {bench("s/r", b)}, CompareOptions{}).rows[0];
  EXPECT_EQ(row.blocks_old, 0u);
  EXPECT_EQ(row.verdict, Verdict::kSlower);
}

TEST(Compare, AAComparisonIsCalledSameAtAboutAlphaWithTheExactTest) {
  CompareOptions options;
  options.min_change_pct = 0;  // the test's own calibration, nothing else
  const double sigma = std::sqrt(0.05 * 0.95 / 1000);
  const double rate = false_positive_rate(20, options);
  EXPECT_GE(rate, 0.05 - 3 * sigma);
  EXPECT_LE(rate, 0.05 + 3 * sigma);
}

TEST(Compare, AAComparisonIsCalledSameAtAboutAlphaWithTheNormalApproximation) {
  CompareOptions options;
  options.min_change_pct = 0;
  const double sigma = std::sqrt(0.05 * 0.95 / 1000);
  const double rate = false_positive_rate(60, options);
  EXPECT_GE(rate, 0.05 - 3 * sigma);
  EXPECT_LE(rate, 0.05 + 3 * sigma);
}

TEST(Compare, MinimumChangeOnlyLowersTheFalsePositiveRate) {
  CompareOptions strict;
  strict.min_change_pct = 0;
  EXPECT_LE(false_positive_rate(20, CompareOptions{}), false_positive_rate(20, strict));
}

TEST(Compare, TenPercentSlowerWithLowNoiseIsSlower) {
  Rng rng{42};
  const auto old_samples = timings(rng, 9, 1e6, 0.01);
  const auto new_samples = timings(rng, 11, 1.1e6, 0.01);
  const Comparison c =
      compare_runs({bench("s/r", old_samples)}, {bench("s/r", new_samples)}, CompareOptions{});
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].verdict, Verdict::kSlower);
  EXPECT_NEAR(c.rows[0].change_pct, 10, 2);
  EXPECT_LT(c.rows[0].test.p_value, 0.001);
  EXPECT_FALSE(c.rows[0].low_power);
}

TEST(Compare, TenPercentFasterIsFaster) {
  Rng rng{7};
  const auto old_samples = timings(rng, 15, 1e6, 0.01);
  const auto new_samples = timings(rng, 15, 0.9e6, 0.01);
  const Comparison c =
      compare_runs({bench("s/r", old_samples)}, {bench("s/r", new_samples)}, CompareOptions{});
  EXPECT_EQ(c.rows[0].verdict, Verdict::kFaster);
  EXPECT_LT(c.rows[0].change_pct, 0);
}

TEST(Compare, SignificantButTinyChangeIsSame) {
  // 0.5% apart with almost no noise: significant, but below the 1% minimum change.
  std::vector<double> a, b;
  for (int i = 0; i < 17; ++i) {
    a.push_back(1e6 + i);
    b.push_back(1.005e6 + i);
  }
  const Comparison c = compare_runs({bench("s/r", a)}, {bench("s/r", b)}, CompareOptions{});
  EXPECT_TRUE(c.rows[0].significant);
  EXPECT_EQ(c.rows[0].verdict, Verdict::kSame);
  CompareOptions no_minimum;
  no_minimum.min_change_pct = 0;
  EXPECT_EQ(compare_runs({bench("s/r", a)}, {bench("s/r", b)}, no_minimum).rows[0].verdict,
            Verdict::kSlower);
}

TEST(Compare, FewSamplesAreFlaggedAndNeverSignificant) {
  // Three samples a side cannot reach p < 0.05 even when completely separated.
  const Comparison c =
      compare_runs({bench("s/r", {1, 2, 3})}, {bench("s/r", {10, 20, 30})}, CompareOptions{});
  EXPECT_TRUE(c.rows[0].low_power);
  EXPECT_EQ(c.rows[0].verdict, Verdict::kSame);
}

TEST(Compare, WarningsNameFewSampleAndNoisyBenchmarks) {
  BenchmarkSamples noisy = bench("s/noisy", {1, 2, 3, 4, 5, 6});
  noisy.noisy = true;
  const Comparison c =
      compare_runs({bench("s/few", {1, 2}), noisy}, {bench("s/few", {3, 4}), noisy}, {});
  const std::vector<std::string> lines = comparison_warnings(c);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("s/few"), std::string::npos);
  EXPECT_NE(lines[0].find("little power"), std::string::npos);
  EXPECT_NE(lines[1].find("s/noisy"), std::string::npos);
  EXPECT_TRUE(c.rows[1].noisy);
}

TEST(Compare, NoWarningsForWellSampledQuietRuns) {
  std::vector<double> a = {1, 2, 3, 4, 5, 6, 7};
  EXPECT_TRUE(comparison_warnings(compare_runs({bench("s/r", a)}, {bench("s/r", a)}, {})).empty());
}

TEST(Compare, GeometricMeanOfMedianRatios) {
  const Comparison c = compare_runs({bench("s/a", {100}), bench("s/b", {100}), bench("s/c", {50})},
                                    {bench("s/a", {200}), bench("s/b", {50}), bench("s/c", {100})},
                                    CompareOptions{});
  // (2 * 0.5 * 2)^(1/3)
  EXPECT_NEAR(c.geomean_ratio, std::cbrt(2.0), 1e-12);
}

TEST(Compare, MediansOfOddAndEvenCounts) {
  const Comparison c =
      compare_runs({bench("s/r", {5, 1, 3})}, {bench("s/r", {4, 1, 2, 10})}, CompareOptions{});
  EXPECT_DOUBLE_EQ(c.rows[0].old_median_ns, 3);
  EXPECT_DOUBLE_EQ(c.rows[0].new_median_ns, 3);
  EXPECT_DOUBLE_EQ(c.rows[0].change_pct, 0);
}

TEST(Compare, UnmatchedBenchmarksAreListedOnEachSide) {
  const Comparison c = compare_runs({bench("s/a", {1}), bench("s/gone", {1})},
                                    {bench("s/new", {1}), bench("s/a", {1})}, CompareOptions{});
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].name, "s/a");
  EXPECT_EQ(c.only_in_old, std::vector<std::string>{"s/gone"});
  EXPECT_EQ(c.only_in_new, std::vector<std::string>{"s/new"});
}

TEST(Compare, RegressionGateUsesItsOwnThreshold) {
  std::vector<double> a, slow3, slow20;
  for (int i = 0; i < 7; ++i) {
    a.push_back(1000 + i);
    slow3.push_back(1030 + i);
    slow20.push_back(1200 + i);
  }
  const Comparison c = compare_runs({bench("s/x", a), bench("s/y", a)},
                                    {bench("s/x", slow3), bench("s/y", slow20)}, CompareOptions{});
  EXPECT_EQ(regressions(c, 5).size(), 1u);
  EXPECT_EQ(regressions(c, 5)[0]->name, "s/y");
  EXPECT_EQ(regressions(c, 1).size(), 2u);
  EXPECT_TRUE(regressions(c, 25).empty());
}

TEST(Compare, FasterIsNeverARegression) {
  std::vector<double> a, fast;
  for (int i = 0; i < 7; ++i) {
    a.push_back(1000 + i);
    fast.push_back(500 + i);
  }
  EXPECT_TRUE(
      regressions(compare_runs({bench("s/x", a)}, {bench("s/x", fast)}, CompareOptions{}), 0)
          .empty());
}

TEST(Compare, TableNamesVerdictsAndGeometricMean) {
  std::vector<double> a, b;
  for (int i = 0; i < 7; ++i) {
    a.push_back(1e6 + i);
    b.push_back(1.2e6 + i);
  }
  const std::string table = format_comparison(
      compare_runs({bench("s/x", a), bench("s/old", a)}, {bench("s/x", b)}, CompareOptions{}),
      "a.json", "b.json");
  EXPECT_NE(table.find("slower"), std::string::npos) << table;
  EXPECT_NE(table.find("+20.00%"), std::string::npos) << table;
  EXPECT_NE(table.find("only in old: s/old"), std::string::npos) << table;
  EXPECT_NE(table.find("geometric mean"), std::string::npos) << table;
}

TEST(Compare, AZeroMedianIsInvalidNeverSame) {
  // 0 us against 175 ms used to read "+0.00%, same".
  std::vector<double> zero(7, 0.0), slow(7, 175e6);
  const Comparison c = compare_runs({bench("s/x", zero), bench("s/y", slow)},
                                    {bench("s/x", slow), bench("s/y", zero)}, CompareOptions{});
  ASSERT_EQ(c.rows.size(), 2u);
  for (const BenchmarkComparison& row : c.rows) {
    EXPECT_EQ(row.verdict, Verdict::kInvalid) << row.name;
    EXPECT_TRUE(std::isnan(row.change_pct)) << row.name;
  }
  EXPECT_EQ(c.geomean_ratio, 1);              // no valid ratio
  EXPECT_EQ(regressions(c, 1e6).size(), 2u);  // the gate never passes a broken measurement
  const std::string table = format_comparison(c, "a", "b");
  EXPECT_NE(table.find("invalid"), std::string::npos) << table;
  EXPECT_NE(table.find("0 same, 2 invalid"), std::string::npos) << table;
  EXPECT_EQ(table.find(" same\n"), std::string::npos) << table;
  const auto warnings = comparison_warnings(c);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("s/x, s/y: a median is not a positive time"), std::string::npos);
}

TEST(Compare, WarningsEscapeControlCharactersInNames) {
  const Comparison c =
      compare_runs({bench("s/\x1b[2J", {1, 2})}, {bench("s/\x1b[2J", {1, 2})}, CompareOptions{});
  const auto warnings = comparison_warnings(c);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("s/\\x1b[2J"), std::string::npos) << warnings[0];
  EXPECT_EQ(warnings[0].find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace cuvil::reports
