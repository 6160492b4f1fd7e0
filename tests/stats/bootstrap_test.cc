// The seeded bootstrap interval of the median: deterministic, and as wide as theory says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "stats/bootstrap.h"

namespace cuvil::stats {
namespace {

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

}  // namespace
}  // namespace cuvil::stats
