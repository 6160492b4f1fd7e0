// Mann-Whitney U against values computed by hand and by brute-force enumeration of every
// split of the pooled sample (an independent method from the recurrence in the code).
#include "stats/mann_whitney.h"

#include <gtest/gtest.h>

namespace cuvil::stats {
namespace {

TEST(MannWhitney, CompletelySeparatedSamplesOfThree) {
  // U = 0; P(U <= 0) = 1/C(6,3) = 1/20, two-sided 0.1.
  const MannWhitneyResult r = mann_whitney_u({1, 2, 3}, {4, 5, 6});
  EXPECT_DOUBLE_EQ(r.u, 0);
  EXPECT_TRUE(r.exact);
  EXPECT_NEAR(r.p_value, 0.1, 1e-12);
}

TEST(MannWhitney, UnequalSizesExact) {
  // Enumerated over all C(9,4) = 126 splits: U = 1, p = 4/126.
  const MannWhitneyResult r = mann_whitney_u({1.1, 3.3, 2.2, 5.5}, {4.4, 6.6, 7.7, 8.8, 9.9});
  EXPECT_DOUBLE_EQ(r.u, 1);
  EXPECT_NEAR(r.p_value, 4.0 / 126.0, 1e-12);
}

TEST(MannWhitney, InterleavedSamplesAreNotSignificant) {
  // Enumerated over C(12,5) = 792 splits: U = 13, p = 0.530303...
  const MannWhitneyResult r = mann_whitney_u({10, 20, 30, 40, 50}, {11, 21, 25, 35, 45, 55, 65});
  EXPECT_DOUBLE_EQ(r.u, 13);
  EXPECT_NEAR(r.p_value, 0.5303030303030303, 1e-12);
}

TEST(MannWhitney, FiveAgainstFiveMatchesTheCriticalValueTable) {
  // Tables give U <= 2 as the two-sided 5% critical region for n1 = n2 = 5:
  // P(U <= 2) = 4/252, P(U <= 3) = 7/252.
  EXPECT_NEAR(mann_whitney_u({1, 2, 3, 4, 7}, {5, 6, 8, 9, 10}).p_value, 8.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_u({1, 2, 3, 4, 8}, {5, 6, 7, 9, 10}).p_value, 14.0 / 252, 1e-12);
}

TEST(MannWhitney, OneSidedPIsTheUpperTailOfTheExactDistribution) {
  // U of the first sample is 23 of 25: P(U >= 23) = P(U <= 2) = 4/252; the other way round,
  // P(U >= 2) = 1 - P(U <= 1) = 250/252.
  EXPECT_NEAR(mann_whitney_u({5, 6, 8, 9, 10}, {1, 2, 3, 4, 7}).p_greater, 4.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_u({1, 2, 3, 4, 7}, {5, 6, 8, 9, 10}).p_greater, 250.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_min_p_greater(5, 5), 1.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_min_p_greater(3, 3), 1.0 / 20, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_min_p_greater(0, 3), 1.0);
}

TEST(MannWhitney, TiesUseTheCorrectedNormalApproximation) {
  // Midranks; tie groups {2,2} and {3,3,3,3}: variance 24/12 * (11 - 66/90),
  // z = (|1.5 - 12| - 0.5) / sqrt(variance).
  const MannWhitneyResult r = mann_whitney_u({1, 2, 2, 3, 3, 3}, {3, 4, 4, 5});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 1.5);
  EXPECT_NEAR(r.p_value, 0.0268262190795, 1e-10);
}

TEST(MannWhitney, LargeSamplesUseTheNormalApproximation) {
  std::vector<double> a, b;
  for (int i = 0; i < 60; ++i) {
    a.push_back(i);
    b.push_back(i + 7.5);
  }
  const MannWhitneyResult r = mann_whitney_u(a, b);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 1378);
  EXPECT_NEAR(r.p_value, 0.0269458561956, 1e-10);
  // One-sided in the direction of the difference: half the two-sided p.
  EXPECT_NEAR(mann_whitney_u(b, a).p_greater, r.p_value / 2, 1e-12);
  EXPECT_GT(r.p_greater, 0.98);
}

TEST(MannWhitney, SwappingTheSamplesMirrorsU) {
  const std::vector<double> a = {3, 9, 1, 7, 5, 11, 13}, b = {2, 4, 8, 6, 10};
  const MannWhitneyResult ab = mann_whitney_u(a, b), ba = mann_whitney_u(b, a);
  EXPECT_DOUBLE_EQ(ab.u + ba.u, 7.0 * 5.0);
  EXPECT_NEAR(ab.p_value, ba.p_value, 1e-12);
}

TEST(MannWhitney, IdenticalValuesGiveNoEvidence) {
  EXPECT_DOUBLE_EQ(mann_whitney_u({4, 4, 4}, {4, 4, 4, 4}).p_value, 1.0);
}

TEST(MannWhitney, AnEmptySampleGivesNoEvidence) {
  EXPECT_DOUBLE_EQ(mann_whitney_u({}, {1, 2, 3}).p_value, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_u({1}, {}).p_value, 1.0);
}

TEST(MannWhitney, SingleSamplesCannotBeSignificant) {
  EXPECT_DOUBLE_EQ(mann_whitney_u({1}, {2}).p_value, 1.0);
}

TEST(MannWhitney, SmallestReachablePValue) {
  EXPECT_NEAR(mann_whitney_min_p(3, 3), 0.1, 1e-12);
  EXPECT_NEAR(mann_whitney_min_p(5, 5), 2.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_min_p(1, 7), 0.25, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_min_p(0, 4), 1.0);
}

TEST(MannWhitney, ExactAndApproximateAgreeNearTheSwitch) {
  // At n = 50 per side the exact p and the normal approximation should be close.
  std::vector<double> a, b;
  for (int i = 0; i < 50; ++i) {
    a.push_back(2 * i);
    b.push_back(2 * i + 13);
  }
  const MannWhitneyResult exact = mann_whitney_u(a, b);
  a.push_back(-1);  // 51 values: approximation
  b.push_back(1000);
  const MannWhitneyResult approx = mann_whitney_u(a, b);
  EXPECT_TRUE(exact.exact);
  EXPECT_FALSE(approx.exact);
  EXPECT_NEAR(exact.p_value, approx.p_value, 0.02);
}

}  // namespace
}  // namespace cuvil::stats
