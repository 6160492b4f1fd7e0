// Summary statistics against hand-computed values and known distributions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "stats/summary.h"

namespace cuvil::stats {
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

TEST(MedianCi, SummaryIntervalDoesNotDependOnSampleOrder) {
  std::vector<double> samples = {4, 8, 15, 16, 23, 42, 7};
  const Summary a = summarize(samples);
  std::reverse(samples.begin(), samples.end());
  const Summary b = summarize(samples);
  EXPECT_EQ(a.median_ci.low, b.median_ci.low);
  EXPECT_EQ(a.median_ci.high, b.median_ci.high);
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

TEST(Stats, WithoutIntervalTheRestIsTheSame) {
  const std::vector<double> samples = {9, 2, 7, 4, 5, 6, 3, 8, 1};
  const Summary full = summarize(samples);
  const Summary plain = summarize(samples, MedianInterval::none);
  EXPECT_EQ(plain.median_ci.low, 0);
  EXPECT_EQ(plain.median_ci.high, 0);
  EXPECT_LT(full.median_ci.low, full.median_ci.high);
  EXPECT_EQ(plain.median, full.median);
  EXPECT_EQ(plain.stddev, full.stddev);
  EXPECT_EQ(plain.p99, full.p99);
}

TEST(Stats, SummaryMedianIsMedianOf) {
  for (const std::vector<double>& v : {std::vector<double>{3, 1, 2}, {4, 1, 3, 2}, {7}}) {
    EXPECT_EQ(summarize(v).median, median_of(v));
  }
}

}  // namespace
}  // namespace cuvil::stats
