// detect_change_points: a 5% step in 2% noise is found, flat series of the same noise raise
// nothing, single outliers are ignored, several shifts, small shifts and bad input.
#include "reports/change_point.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "base/error.h"
#include "base/splitmix64.h"

namespace cuvil::reports {
namespace {

// SplitMix64 + Box-Muller: the same noise on every machine for a given seed.
struct GaussianRng : cuvil::SplitMix64 {
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform()); }
};

constexpr double kNoise = 0.02;  // relative standard deviation of every point
constexpr uint64_t kSeeds[] = {1, 2, 3, 5, 7, 11, 13, 17, 19, 23};

// `n` nightly medians around `level` (ns) with kNoise relative noise; from index `step_at` on,
// the level is multiplied by `step`.
std::vector<double> history(uint64_t seed, size_t n, size_t step_at, double step,
                            double level = 1e7) {
  GaussianRng rng{seed * 1000003 + 7};
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) {
    const double base = i >= step_at ? level * step : level;
    out.push_back(base * (1 + kNoise * rng.normal()));
  }
  return out;
}

TEST(ChangePoint, FindsAFivePercentSlowdownInTwoPercentNoise) {
  for (uint64_t seed : kSeeds) {
    const auto points = detect_change_points(history(seed, 40, 20, 1.05));
    ASSERT_EQ(points.size(), 1u) << "seed " << seed;
    EXPECT_NEAR(static_cast<double>(points[0].index), 20.0, 2.0) << "seed " << seed;
    EXPECT_EQ(points[0].direction, ChangeDirection::kRegression);
    EXPECT_NEAR(points[0].change_pct, 5.0, 2.0) << "seed " << seed;
    EXPECT_LT(points[0].p_value, kChangePointSignificance);
  }
}

TEST(ChangePoint, FindsAFivePercentSpeedupAsAnImprovement) {
  for (uint64_t seed : kSeeds) {
    const auto points = detect_change_points(history(seed, 31, 13, 0.95));
    ASSERT_EQ(points.size(), 1u) << "seed " << seed;
    EXPECT_NEAR(static_cast<double>(points[0].index), 13.0, 2.0) << "seed " << seed;
    EXPECT_EQ(points[0].direction, ChangeDirection::kImprovement);
    EXPECT_LT(points[0].change_pct, 0);
  }
}

TEST(ChangePoint, FlatSeriesWithTwoPercentNoiseRaisesNothing) {
  for (uint64_t seed : kSeeds) {
    for (size_t n : {7u, 17u, 40u, 101u}) {
      EXPECT_TRUE(detect_change_points(history(seed, n, n, 1.0)).empty())
          << "seed " << seed << ", " << n << " points";
    }
  }
}

TEST(ChangePoint, IgnoresOneOutlierInTheMiddle) {
  for (uint64_t seed : kSeeds) {
    std::vector<double> series = history(seed, 40, 40, 1.0);
    series[17] *= 1.5;
    EXPECT_TRUE(detect_change_points(series).empty()) << "seed " << seed;
  }
}

TEST(ChangePoint, IgnoresOneOutlierAtTheNewestPoint) {
  for (uint64_t seed : kSeeds) {
    std::vector<double> series = history(seed, 25, 25, 1.0);
    series.back() *= 1.3;
    EXPECT_TRUE(detect_change_points(series).empty()) << "seed " << seed;
  }
}

TEST(ChangePoint, FindsAStepUpAndTheStepBackDown) {
  std::vector<double> series = history(3, 45, 15, 1.10);
  for (size_t i = 30; i < series.size(); ++i) series[i] /= 1.10;
  const auto points = detect_change_points(series);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_NEAR(static_cast<double>(points[0].index), 15.0, 1.0);
  EXPECT_EQ(points[0].direction, ChangeDirection::kRegression);
  EXPECT_NEAR(static_cast<double>(points[1].index), 30.0, 1.0);
  EXPECT_EQ(points[1].direction, ChangeDirection::kImprovement);
}

TEST(ChangePoint, ReportsTheMediansOnEitherSide) {
  std::vector<double> series(17, 100.0);
  for (size_t i = 8; i < series.size(); ++i) series[i] = 120.0;
  const auto points = detect_change_points(series);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].index, 8u);
  EXPECT_DOUBLE_EQ(points[0].before, 100.0);
  EXPECT_DOUBLE_EQ(points[0].after, 120.0);
  EXPECT_NEAR(points[0].change_pct, 20.0, 1e-9);
}

TEST(ChangePoint, ShiftsBelowTheMinimumChangeAreNotReported) {
  // A 0.5% step in 0.05% noise is real, but below kChangePointMinChangePct.
  std::vector<double> series;
  GaussianRng rng{42};
  for (int i = 0; i < 30; ++i) series.push_back((i < 15 ? 1.0 : 1.005) * (1 + 5e-4 * rng.normal()));
  EXPECT_TRUE(detect_change_points(series).empty());
  ChangePointOptions options;
  options.min_change_pct = 0;
  EXPECT_EQ(detect_change_points(series, options).size(), 1u);
}

TEST(ChangePoint, TooShortOrConstantSeriesHaveNone) {
  EXPECT_TRUE(detect_change_points({}).empty());
  EXPECT_TRUE(detect_change_points({1.0}).empty());
  EXPECT_TRUE(detect_change_points({1, 1, 1, 2, 2}).empty());  // under 2 * min segment
  EXPECT_TRUE(detect_change_points(std::vector<double>(17, 3.0)).empty());
}

TEST(ChangePoint, AStepNeedsTheMinimumSegmentAfterIt) {
  // A clear 20% shift only two points from the end is not (yet) a change point; two nights
  // later it is. (Not one night later: with exactly the minimum segment after it only the two
  // arrangements with those points at an end are as extreme, p ~ 2/C(21,3) ~ 0.0015 against a
  // 0.005 significance, so whether 999 permutations call it would depend on the seed.)
  std::vector<double> series = history(5, 20, 18, 1.2);
  EXPECT_TRUE(detect_change_points(series).empty());
  series.push_back(series.back());
  series.push_back(series.back());
  EXPECT_EQ(detect_change_points(series).size(), 1u);
}

// The minimum the dashboard names ("history too short for change points (need N)"): below it
// a 47% step in the middle of the history, in 2% noise, is never found; from it on it is.
TEST(ChangePoint, MinRunsIsWhereAStepStartsBeingFound) {
  const size_t need = change_point_min_runs();
  EXPECT_EQ(need, 13u) << "docs/reports.md names this number";
  for (uint64_t seed : kSeeds) {
    for (size_t n = 2 * kChangePointMinSegment; n < need; ++n) {
      EXPECT_TRUE(detect_change_points(history(seed, n, n / 2, 1.47)).empty())
          << n << " runs, seed " << seed;
    }
    for (size_t n = need; n < need + 20; ++n) {
      EXPECT_EQ(detect_change_points(history(seed, n, n / 2, 1.47)).size(), 1u)
          << n << " runs, seed " << seed;
    }
  }
}

TEST(ChangePoint, MinRunsFollowsTheOptions) {
  ChangePointOptions o;
  o.significance = 0.05;  // an easier test needs fewer runs
  EXPECT_LT(change_point_min_runs(o), change_point_min_runs());
  o = {};
  o.min_segment = 10;  // never fewer than the two segments
  EXPECT_GE(change_point_min_runs(o), 20u);
  o = {};
  o.significance = 0.001;  // 999 permutations resolve p down to 0.001 only: never significant
  EXPECT_EQ(change_point_min_runs(o), 0u);
  o = {};
  o.permutations = 0;
  EXPECT_THROW(change_point_min_runs(o), UserError);
}

TEST(ChangePoint, SameSeriesSameAnswer) {
  const std::vector<double> series = history(9, 33, 11, 1.04);
  const auto a = detect_change_points(series);
  const auto b = detect_change_points(series);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].p_value, b[i].p_value);
  }
}

TEST(ChangePoint, BadOptionsAndValuesAreUserErrors) {
  const std::vector<double> series = history(1, 10, 10, 1.0);
  ChangePointOptions o;
  o.significance = 0;
  EXPECT_THROW(detect_change_points(series, o), UserError);
  o = {};
  o.significance = 1;
  EXPECT_THROW(detect_change_points(series, o), UserError);
  o = {};
  o.min_segment = 0;
  EXPECT_THROW(detect_change_points(series, o), UserError);
  o = {};
  o.permutations = 0;
  EXPECT_THROW(detect_change_points(series, o), UserError);
  o = {};
  o.min_change_pct = -1;
  EXPECT_THROW(detect_change_points(series, o), UserError);
  EXPECT_THROW(detect_change_points({1, 2, NAN, 4}), UserError);
  EXPECT_THROW(detect_change_points({1, 2, INFINITY, 4}), UserError);
}

TEST(ChangePoint, DirectionNames) {
  EXPECT_STREQ(direction_name(ChangeDirection::kRegression), "regression");
  EXPECT_STREQ(direction_name(ChangeDirection::kImprovement), "improvement");
}

}  // namespace
}  // namespace cuvil::reports
