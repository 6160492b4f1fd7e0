// Summary statistics against hand-computed values and known distributions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "bench_suite/stats.h"

namespace cuvil::bench {
namespace {

TEST(Stats, OddCountMedianAndSampleStddev) {
  const Summary s = summarize({5, 1, 3});
  EXPECT_EQ(s.count, 3);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.stddev, 2);  // n - 1 in the denominator
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_NEAR(s.cv, 2.0 / 3.0, 1e-12);
}

TEST(Stats, EvenCountMedianAveragesMiddle) {
  EXPECT_DOUBLE_EQ(summarize({4, 1, 2, 3}).median, 2.5);
}

TEST(Stats, SingleSampleHasZeroSpreadAndEveryPercentileIsIt) {
  const Summary s = summarize({7});
  EXPECT_EQ(s.stddev, 0);
  EXPECT_EQ(s.cv, 0);
  EXPECT_EQ(s.p50, 7);
  EXPECT_EQ(s.p999, 7);
  EXPECT_EQ(s.median_ci.low, 7);
  EXPECT_EQ(s.median_ci.high, 7);
}

TEST(Stats, EmptyIsAllZero) {
  const Summary s = summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.median, 0);
  EXPECT_EQ(s.p99, 0);
}

// Nearest rank: rank = ceil(p/100 * n), 1-based.
TEST(Percentiles, NearestRankOnSevenSamplesByHand) {
  const std::vector<double> sorted = {10, 20, 30, 40, 50, 60, 70};
  EXPECT_EQ(nearest_rank_percentile(sorted, 50), 40);  // ceil(3.5) = 4
  EXPECT_EQ(nearest_rank_percentile(sorted, 90), 70);  // ceil(6.3) = 7
  EXPECT_EQ(nearest_rank_percentile(sorted, 14), 10);  // ceil(0.98) = 1
  EXPECT_EQ(nearest_rank_percentile(sorted, 15), 20);  // ceil(1.05) = 2
  EXPECT_EQ(nearest_rank_percentile(sorted, 0), 10);   // clamped to rank 1
  EXPECT_EQ(nearest_rank_percentile(sorted, 100), 70);
}

TEST(Percentiles, NearestRankOnTenSamplesHitsExactRanks) {
  const std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(nearest_rank_percentile(sorted, 50), 5);  // exactly rank 5, not 5.5
  EXPECT_EQ(nearest_rank_percentile(sorted, 90), 9);  // 0.9 * 10 = 9 exactly
  EXPECT_EQ(nearest_rank_percentile(sorted, 95), 10);
  EXPECT_EQ(nearest_rank_percentile(sorted, 99.9), 10);
}

TEST(Percentiles, SummaryPercentilesOnThousandSamples) {
  std::vector<double> samples;
  for (int i = 1000; i >= 1; --i) samples.push_back(i);  // unsorted input
  const Summary s = summarize(samples);
  EXPECT_EQ(s.p50, 500);
  EXPECT_EQ(s.p90, 900);
  EXPECT_EQ(s.p95, 950);
  EXPECT_EQ(s.p99, 990);
  EXPECT_EQ(s.p999, 999);
  EXPECT_DOUBLE_EQ(s.median, 500.5);
}

TEST(Stats, NormalSamplesRecoverMeanAndStddev) {
  std::mt19937_64 rng(17);
  std::normal_distribution<double> normal(100.0, 5.0);
  std::vector<double> samples(5001);
  for (double& x : samples) x = normal(rng);
  const Summary s = summarize(samples);
  // Tolerances are about 4 standard errors of each estimate at n = 5001.
  EXPECT_NEAR(s.mean, 100.0, 0.3);
  EXPECT_NEAR(s.median, 100.0, 0.35);
  EXPECT_NEAR(s.stddev, 5.0, 0.2);
  EXPECT_NEAR(s.cv, 0.05, 0.003);
  EXPECT_NEAR(s.p90, 100.0 + 1.2816 * 5.0, 0.5);  // normal quantiles
  EXPECT_NEAR(s.p99, 100.0 + 2.3263 * 5.0, 1.0);
}

TEST(Stats, ExponentialSamplesHaveMedianLn2OverRate) {
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> exponential(2.0);
  std::vector<double> samples(5001);
  for (double& x : samples) x = exponential(rng);
  const Summary s = summarize(samples);
  // Tolerances are about 4 standard errors of each estimate at n = 5001.
  EXPECT_NEAR(s.median, std::log(2.0) / 2.0, 0.03);
  EXPECT_NEAR(s.mean, 0.5, 0.03);
  EXPECT_NEAR(s.p90, std::log(10.0) / 2.0, 0.08);
  EXPECT_LE(s.median_ci.low, s.median);
  EXPECT_GE(s.median_ci.high, s.median);
}

TEST(MedianCi, OrderStatisticRankByHand) {
  // Coverage of [x_(k), x_(n+1-k)] is 1 - 2 P(Bin(n, 1/2) <= k - 1).
  EXPECT_EQ(median_ci_rank(5, 0.95), 0);   // 1 - 2/32 = 93.75% < 95%: no interval
  EXPECT_EQ(median_ci_rank(6, 0.95), 1);   // 1 - 2/64 = 96.9%
  EXPECT_EQ(median_ci_rank(9, 0.95), 2);   // P(B<=1) = 10/512 = 1.95%
  EXPECT_EQ(median_ci_rank(17, 0.95), 5);  // P(B<=4) = 3214/131072 = 2.45%, P(B<=5) = 7.2%
  EXPECT_EQ(median_ci_rank(1, 0.95), 0);
}

TEST(MedianCi, OrderStatisticIntervalPicksTheRanks) {
  const Interval ci = order_statistic_median_ci({9, 1, 8, 2, 7, 3, 6, 4, 5}, 0.95);
  EXPECT_EQ(ci.low, 2);  // ranks 2 and 8 of 1..9
  EXPECT_EQ(ci.high, 8);
  const Interval tiny = order_statistic_median_ci({3, 1, 2}, 0.95);
  EXPECT_EQ(tiny.low, 1);  // below 6 samples: the whole range
  EXPECT_EQ(tiny.high, 3);
}

TEST(MedianCi, OrderStatisticCoversTheTrueMedianAtItsLevel) {
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> exponential(1.0);
  const double true_median = std::log(2.0);
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> samples(31);
    for (double& x : samples) x = exponential(rng);
    const Interval ci = order_statistic_median_ci(samples, 0.95);
    covered += ci.low <= true_median && true_median <= ci.high;
  }
  // Exact coverage for n = 31 is 97.1%; allow the binomial spread of 2000 trials.
  EXPECT_GT(covered, trials * 0.955);
  EXPECT_LT(covered, trials * 0.99);
}

TEST(MedianCi, BootstrapIsDeterministicForASeed) {
  const std::vector<double> samples = {5, 3, 9, 1, 7, 2, 8, 6, 4, 10, 11};
  const Interval a = bootstrap_median_ci(samples, 0.95, 1000, 42);
  const Interval b = bootstrap_median_ci(samples, 0.95, 1000, 42);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_LE(a.low, 6);
  EXPECT_GE(a.high, 6);
}

TEST(MedianCi, BootstrapOfConstantSamplesIsAPoint) {
  const Interval ci = bootstrap_median_ci(std::vector<double>(17, 3.5), 0.95, 500, 1);
  EXPECT_EQ(ci.low, 3.5);
  EXPECT_EQ(ci.high, 3.5);
}

TEST(MedianCi, BootstrapOfNormalSamplesMatchesTheAsymptoticWidth) {
  // The median of n normal samples has stddev sigma * sqrt(pi / (2n)).
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> samples(2001);
  for (double& x : samples) x = normal(rng);
  const Interval ci = bootstrap_median_ci(samples, 0.95, kBootstrapResamples, kBootstrapSeed);
  const double expected_half_width = 1.96 * std::sqrt(M_PI / (2.0 * 2001));
  EXPECT_NEAR(0.5 * (ci.high - ci.low), expected_half_width, 0.3 * expected_half_width);
}

TEST(MedianCi, SummaryIntervalDoesNotDependOnSampleOrder) {
  std::vector<double> samples = {4, 8, 15, 16, 23, 42, 7};
  const Summary a = summarize(samples);
  std::reverse(samples.begin(), samples.end());
  const Summary b = summarize(samples);
  EXPECT_EQ(a.median_ci.low, b.median_ci.low);
  EXPECT_EQ(a.median_ci.high, b.median_ci.high);
}

}  // namespace
}  // namespace cuvil::bench
