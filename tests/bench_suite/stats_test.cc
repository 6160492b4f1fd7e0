#include <gtest/gtest.h>

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

TEST(Stats, SingleSampleHasZeroSpread) {
  const Summary s = summarize({7});
  EXPECT_EQ(s.stddev, 0);
  EXPECT_EQ(s.cv, 0);
}

TEST(Stats, EmptyIsAllZero) {
  EXPECT_EQ(summarize({}).count, 0);
}

}  // namespace
}  // namespace cuvil::bench
