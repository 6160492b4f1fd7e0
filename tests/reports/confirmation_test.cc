#include "reports/confirmation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace cuvil::reports {
namespace {

// Rounds of timings around `median_ns`: each round shifted by its own drift (the machine's
// state between processes, lognormal with sigma `round_sigma`), each sample by its own noise.
std::vector<std::vector<double>> rounds(std::mt19937_64& rng, double median_ns, int count,
                                        int samples, double round_sigma, double sample_sigma) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<std::vector<double>> out;
  for (int r = 0; r < count; ++r) {
    const double drift = std::exp(round_sigma * normal(rng));
    std::vector<double> round;
    for (int s = 0; s < samples; ++s) {
      round.push_back(median_ns * drift * std::exp(sample_sigma * std::abs(normal(rng))));
    }
    out.push_back(std::move(round));
  }
  return out;
}

// How often `confirm_regression` says confirmed over `trials` seeds, `count` rounds a side.
double confirmed_rate(double slowdown, double round_sigma, double sample_sigma, int trials,
                      int count = 3) {
  int confirmed = 0;
  for (int seed = 0; seed < trials; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed) * 7919 + 1);
    const auto old_side = rounds(rng, 1e6, count, 7, round_sigma, sample_sigma);
    const auto new_side = rounds(rng, 1e6 * (1 + slowdown), count, 7, round_sigma, sample_sigma);
    confirmed += confirm_regression(old_side, new_side).verdict == ConfirmationVerdict::kConfirmed;
  }
  return static_cast<double>(confirmed) / trials;
}

TEST(Confirmation, UnchangedCodeIsConfirmedAtMostAtTheSignificanceLevel) {
  EXPECT_LE(confirmed_rate(0.0, 0.01, 0.02, 2000), 0.05);
  // Drift between rounds as large as the effect sought: even rarer, it reads as noisy.
  EXPECT_LE(confirmed_rate(0.0, 0.03, 0.02, 2000), 0.05);
  // More rounds tolerate inversions, yet the rank test on rounds keeps the rate at alpha.
  EXPECT_LE(confirmed_rate(0.0, 0.01, 0.02, 2000, 5), 0.05);
  EXPECT_LE(confirmed_rate(0.0, 0.05, 0.02, 2000, 5), 0.05);
  EXPECT_LE(confirmed_rate(0.0, 0.05, 0.02, 2000, 8), 0.05);
}

TEST(Confirmation, MoreRoundsConfirmASlowdownUnderDriftMoreOften) {
  // Rounds drifting by 5% (a loaded machine): three rounds must not overlap at all, five may.
  const double three = confirmed_rate(0.10, 0.05, 0.02, 1000, 3);
  const double five = confirmed_rate(0.10, 0.05, 0.02, 1000, 5);
  const double eight = confirmed_rate(0.10, 0.05, 0.02, 1000, 8);  // the nightly's default
  EXPECT_GT(five, three + 0.1) << "three rounds " << three << ", five " << five;
  EXPECT_GT(eight, five + 0.05) << "five rounds " << five << ", eight " << eight;
}

TEST(Confirmation, ATenPercentSlowdownIsConfirmed) {
  EXPECT_GE(confirmed_rate(0.10, 0.01, 0.02, 500), 0.95);
}

TEST(Confirmation, ASpeedupIsNeverARegression) {
  EXPECT_EQ(confirmed_rate(-0.10, 0.01, 0.02, 200), 0.0);
}

TEST(Confirmation, RoundsThatDisagreeAreNoisy) {
  const std::vector<std::vector<double>> old_side = {
      {100, 101, 102}, {120, 121, 122}, {110, 110, 110}};
  const std::vector<std::vector<double>> new_side = {
      {110, 111, 112}, {131, 132, 133}, {121, 121, 121}};
  const Confirmation c = confirm_regression(old_side, new_side);
  EXPECT_EQ(c.verdict, ConfirmationVerdict::kNoisy);
  EXPECT_NEAR(c.old_spread_pct, 19.8, 0.1);
  EXPECT_STREQ(confirmation_verdict_name(c.verdict), "unconfirmed: noisy");
}

TEST(Confirmation, TwoRoundsASideCannotReachTheSignificanceLevel) {
  // The best two rounds can do is 1 in C(4, 2) = 6 by chance: not enough data, however clear.
  const Confirmation c =
      confirm_regression({{100, 101, 102}, {100, 101, 102}}, {{150, 151, 152}, {150, 151, 152}});
  EXPECT_EQ(c.verdict, ConfirmationVerdict::kNotEnoughData);
  EXPECT_NE(c.reason.find("needs 3 a side"), std::string::npos) << c.reason;
}

TEST(Confirmation, OneRoundIsNotEnoughData) {
  const Confirmation c = confirm_regression({{100, 101, 102}}, {{130, 131, 132}});
  EXPECT_EQ(c.verdict, ConfirmationVerdict::kNotEnoughData);
}

TEST(Confirmation, ARoundOfTwoSamplesIsNotEnoughData) {
  const Confirmation c =
      confirm_regression({{100, 101, 102}, {100, 101}}, {{130, 131, 132}, {130, 131, 132}});
  EXPECT_EQ(c.verdict, ConfirmationVerdict::kNotEnoughData);
}

TEST(Confirmation, ASlowdownInOnlySomePairsIsNotConfirmed) {
  // Pooled, the new side is slower; but in pair 2 it is not.
  const std::vector<std::vector<double>> old_side = {{100, 100.5, 101, 100.2, 100.7},
                                                     {102, 102.5, 102.2, 102.4, 102.1}};
  const std::vector<std::vector<double>> new_side = {{106, 106.5, 106.2, 106.4, 106.1},
                                                     {101.5, 101.6, 101.7, 101.8, 101.9}};
  const Confirmation c = confirm_regression(old_side, new_side, {0.05, 1.0});
  EXPECT_NE(c.verdict, ConfirmationVerdict::kConfirmed);
}

TEST(Confirmation, ASlowdownBelowTheMinimumEffectIsNotConfirmed) {
  const std::vector<std::vector<double>> old_side = {
      {100, 100.1, 100.2, 100.3}, {100, 100.1, 100.2, 100.3}, {100, 100.1, 100.2, 100.3}};
  const std::vector<std::vector<double>> new_side = {
      {101, 101.1, 101.2, 101.3}, {101, 101.1, 101.2, 101.3}, {101, 101.1, 101.2, 101.3}};
  const Confirmation c = confirm_regression(old_side, new_side, {0.05, 3.0});
  EXPECT_EQ(c.verdict, ConfirmationVerdict::kNotConfirmed);
  EXPECT_NEAR(c.change_pct, 1.0, 0.01);
}

}  // namespace
}  // namespace cuvil::reports
