// The stopping rule on synthetic sample streams: no clock, no timing asserted.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "base/error.h"
#include "base/splitmix64.h"
#include "bench_suite/stopping_rule.h"

namespace cuvil::bench {
namespace {

constexpr double kNsPerMs = 1e6;

StoppingCriteria criteria(int min_samples, double min_time_s, double timeout_s,
                          int max_samples = 100000) {
  StoppingCriteria c;
  c.min_samples = min_samples;
  c.min_time_s = min_time_s;
  c.timeout_s = timeout_s;
  c.max_samples = max_samples;
  c.max_noise = 0.02;
  return c;
}

// Feeds `next(i)` until the rule stops (or `limit` samples); returns the samples.
std::vector<double> drive(StoppingRule& rule, const std::function<double(int)>& next,
                          int limit = 1000000) {
  std::vector<double> samples;
  for (int i = 0; i < limit; ++i) {
    samples.push_back(next(i));
    if (rule.should_stop(samples)) break;
  }
  return samples;
}

TEST(StoppingRule, ConstantStreamStopsAtMinSamples) {
  StoppingRule rule(criteria(7, 0.0, 10.0));
  const auto samples = drive(rule, [](int) { return 1 * kNsPerMs; });
  EXPECT_EQ(samples.size(), 7u);
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_FALSE(rule.noisy());
  EXPECT_EQ(rule.noise(), 0);
}

TEST(StoppingRule, ConstantStreamWaitsForMinTime) {
  // 1 ms samples and a 0.05 s floor: 50 samples even though the first 3 were already quiet.
  StoppingRule rule(criteria(3, 0.05, 10.0));
  const auto samples = drive(rule, [](int) { return 1 * kNsPerMs; });
  EXPECT_EQ(samples.size(), 50u);
  EXPECT_EQ(rule.reason(), StopReason::converged);
}

TEST(StoppingRule, VeryNoisyStreamHitsTheTimeoutAndSaysNoisy) {
  // Alternating 1 ms / 3 ms: the median's interval always spans both values.
  StoppingRule rule(criteria(5, 0.01, 0.2));
  const auto samples = drive(rule, [](int i) { return (i % 2 ? 3 : 1) * kNsPerMs; });
  EXPECT_EQ(rule.reason(), StopReason::timeout);
  EXPECT_TRUE(rule.noisy());
  EXPECT_GT(rule.noise(), 0.02);
  EXPECT_GE(rule.elapsed_ns(), 0.2e9);
  EXPECT_LT(rule.elapsed_ns(), 0.2e9 + 3 * kNsPerMs);  // stopped at the first sample past it
}

TEST(StoppingRule, NoiseThatSettlesStopsWhenItSettles) {
  // 40 wild samples, then a steady 2 ms: converges soon after the steady samples dominate.
  StoppingRule rule(criteria(5, 0.0, 100.0));
  const auto samples = drive(rule, [](int i) {
    if (i < 40) return (i % 3 == 0 ? 9.0 : i % 3 == 1 ? 1.0 : 4.0) * kNsPerMs;
    return 2 * kNsPerMs;
  });
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_GT(samples.size(), 40u);
  EXPECT_LT(samples.size(), 200u);
  EXPECT_LE(rule.noise(), 0.02);
}

TEST(StoppingRule, MaxSamplesEndsANoisyStream) {
  StoppingRule rule(criteria(3, 0.0, 1000.0, /*max_samples=*/17));
  const auto samples = drive(rule, [](int i) { return (i % 2 ? 5 : 1) * kNsPerMs; });
  EXPECT_EQ(samples.size(), 17u);
  EXPECT_EQ(rule.reason(), StopReason::max_samples);
  EXPECT_TRUE(rule.noisy());
}

TEST(StoppingRule, TimeoutNeverCutsBelowMinSamples) {
  // Each sample alone exceeds the timeout: still min_samples of them.
  StoppingRule rule(criteria(4, 0.0, 0.001));
  const auto samples = drive(rule, [](int i) { return (i + 1) * 10 * kNsPerMs; });
  EXPECT_EQ(samples.size(), 4u);
  EXPECT_EQ(rule.reason(), StopReason::timeout);
}

TEST(StoppingRule, SlightJitterWithinTargetConverges) {
  // +-1% jitter around 10 ms: within the 2% target at once.
  StoppingRule rule(criteria(5, 0.0, 10.0));
  const auto samples = drive(rule, [](int i) { return (10 + 0.1 * ((i * 7) % 3 - 1)) * kNsPerMs; });
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_EQ(samples.size(), 5u);
}

TEST(StoppingRule, RareOutliersDoNotMakeItNoisy) {
  // Every 10th sample is 5x slower (a shared machine's hiccup): the median is still well known.
  StoppingRule rule(criteria(20, 0.0, 10.0));
  const auto samples = drive(rule, [](int i) { return (i % 10 == 9 ? 50.0 : 10.0) * kNsPerMs; });
  EXPECT_EQ(rule.reason(), StopReason::converged);
}

TEST(StoppingRule, ASpeedChangeDuringTheRunIsNoisyThoughTheIntervalConverged) {
  // The machine slows by 20% after 30 samples; the interval then narrows around the new level,
  // but the run's stretches in time disagree.
  StoppingRule rule(criteria(120, 0.0, 100.0));
  const auto samples =
      drive(rule, [](int i) { return (i < 30 ? 10.0 : 12.0) * kNsPerMs + (i * 7919) % 101; });
  EXPECT_FALSE(rule.drifted());  // not judged yet
  rule.judge_drift(samples);
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_TRUE(rule.drifted());
  EXPECT_TRUE(rule.noisy());
  EXPECT_NEAR(rule.drift().spread_pct, 20, 0.1);
}

TEST(StoppingRule, WideNoiseInNoOrderIsNotDrift) {
  // Each sample is 10 or 13 ms at random: stretches of 15 samples have medians 30% apart by
  // chance, and shuffled samples' stretches spread as far, so no drift is called (the run is
  // noisy for its interval alone).
  SplitMix64 rng{3};
  StoppingRule rule(criteria(120, 0.0, 2.0));
  rule.judge_drift(drive(rule, [&](int) { return (rng.below(2) ? 10.0 : 13.0) * kNsPerMs; }));
  EXPECT_GT(rule.drift().spread_pct, 4);
  EXPECT_FALSE(rule.drifted());
  EXPECT_EQ(rule.reason(), StopReason::timeout);
}

TEST(StoppingRule, WarmupNeedsCountAndTime) {
  StoppingCriteria c = criteria(1, 0, 1);
  c.warmup_iterations = 2;
  c.warmup_time_s = 0.01;
  const StoppingRule rule(c);
  EXPECT_TRUE(rule.needs_warmup(0, 0));
  EXPECT_TRUE(rule.needs_warmup(1, 20 * kNsPerMs));  // time met, count not
  EXPECT_TRUE(rule.needs_warmup(2, 5 * kNsPerMs));   // count met, time not
  EXPECT_FALSE(rule.needs_warmup(2, 10 * kNsPerMs));
}

TEST(StoppingRule, NoWarmupWhenBothAreZero) {
  StoppingCriteria c = criteria(1, 0, 1);
  c.warmup_iterations = 0;
  c.warmup_time_s = 0;
  EXPECT_FALSE(StoppingRule(c).needs_warmup(0, 0));
}

TEST(StoppingRule, NoiseIsTheMedianIntervalHalfWidth) {
  // 9 samples 1..9: the 95% interval is [2, 8], half-width 3 on a median of 5.
  EXPECT_NEAR(relative_median_noise({1, 2, 3, 4, 5, 6, 7, 8, 9}), 0.6, 1e-12);
  EXPECT_TRUE(std::isinf(relative_median_noise({5})));
  EXPECT_TRUE(std::isinf(relative_median_noise({})));
}

TEST(StoppingRule, EtaShrinksAsTheFloorsAreMet) {
  StoppingRule rule(criteria(10, 0.0, 100.0));
  std::vector<double> samples = {1 * kNsPerMs, 1 * kNsPerMs};
  rule.should_stop(samples);
  EXPECT_NEAR(rule.eta_s(samples), 8 * 1e-3, 1e-9);  // 8 more 1 ms samples
}

TEST(StoppingRule, EtaIsCappedByTheTimeout) {
  StoppingRule rule(criteria(5, 0.0, 0.1));
  std::vector<double> samples;
  for (int i = 0; i < 6; ++i) samples.push_back((i % 2 ? 3 : 1) * kNsPerMs);
  rule.should_stop(samples);
  EXPECT_LE(rule.eta_s(samples), 0.1);
  EXPECT_GT(rule.eta_s(samples), 0.0);
}

TEST(StoppingCriteria, ContradictionsAreUserErrors) {
  StoppingCriteria c;
  c.max_samples = 3;
  c.min_samples = 4;
  EXPECT_THROW(c.validate(), UserError);
  c = {};
  c.timeout_s = 0.1;
  c.min_time_s = 1;
  EXPECT_THROW(c.validate(), UserError);
  c = {};
  c.max_noise = 0;
  EXPECT_THROW(c.validate(), UserError);
  c = {};
  c.min_samples = 0;
  EXPECT_THROW(c.validate(), UserError);
  EXPECT_NO_THROW(StoppingCriteria{}.validate());
}

TEST(StopReason, Names) {
  EXPECT_STREQ(to_string(StopReason::converged), "converged");
  EXPECT_STREQ(to_string(StopReason::timeout), "timeout");
  EXPECT_STREQ(to_string(StopReason::max_samples), "max_samples");
}

}  // namespace
}  // namespace cuvil::bench
