// Order statistics (median, nearest-rank percentiles, the distribution-free median interval)
// against hand-computed values and known distributions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "stats/order_statistics.h"

namespace cuvil::stats {
namespace {

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

TEST(Percentiles, NearestRankOfNoneOrOneSample) {
  EXPECT_EQ(nearest_rank_percentile({}, 50), 0);
  EXPECT_EQ(nearest_rank_percentile({3}, 10), 3);
  EXPECT_EQ(nearest_rank_percentile({3}, 100), 3);
}

TEST(Percentiles, LinearQuantileInterpolatesBetweenOrderStatistics) {
  const std::vector<double> sorted = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(linear_quantile(sorted, 0.5), 30);   // position 2
  EXPECT_DOUBLE_EQ(linear_quantile(sorted, 0.05), 12);  // position 0.2
  EXPECT_DOUBLE_EQ(linear_quantile(sorted, 0.95), 48);  // position 3.8
  EXPECT_DOUBLE_EQ(linear_quantile(sorted, 0), 10);
  EXPECT_DOUBLE_EQ(linear_quantile(sorted, 1), 50);
  EXPECT_DOUBLE_EQ(linear_quantile({1, 2, 3, 4}, 0.5), 2.5);  // the median of an even count
  EXPECT_EQ(linear_quantile({}, 0.5), 0);
  EXPECT_EQ(linear_quantile({7}, 0.3), 7);
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

}  // namespace
}  // namespace cuvil::stats
