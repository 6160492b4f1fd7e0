// The measure loop through an injected sampler: warm-up, sampling, verdict, progress.
#include <gtest/gtest.h>

#include "bench_suite/measure.h"
#include "passes/ir/error.h"

namespace cuvil::bench {
namespace {

constexpr double kMs = 1e6;

MeasureOptions quick() {
  MeasureOptions o;
  o.warmup_iterations = 2;
  o.warmup_time_s = 0;
  o.min_samples = 5;
  o.min_time_s = 0;
  o.timeout_s = 1;
  return o;
}

// A fake workload: returns scripted samples and counts its calls.
struct ScriptedSampler {
  std::function<double(int)> value;
  int calls = 0;
  Sampler sampler() {
    return [this] {
      const double v = value(calls++);
      return Sample{v, 2 * v};
    };
  }
};

TEST(Measure, WarmupRunsAreKeptApartFromSamples) {
  ScriptedSampler s{[](int i) { return i < 2 ? 50 * kMs : 1 * kMs; }};
  const Measurement m = measure(s.sampler(), quick());
  ASSERT_EQ(m.warmup_real_ns.size(), 2u);
  EXPECT_EQ(m.warmup_real_ns[0], 50 * kMs);
  EXPECT_EQ(m.real_ns.size(), 5u);
  for (double x : m.real_ns) EXPECT_EQ(x, 1 * kMs);
  EXPECT_EQ(s.calls, 7);
}

TEST(Measure, KeepsCpuTimeBesideRealTime) {
  ScriptedSampler s{[](int) { return 3 * kMs; }};
  const Measurement m = measure(s.sampler(), quick());
  ASSERT_EQ(m.cpu_ns.size(), m.real_ns.size());
  EXPECT_EQ(m.cpu_ns[0], 6 * kMs);
}

TEST(Measure, ConstantWorkloadConverges) {
  ScriptedSampler s{[](int) { return 1 * kMs; }};
  const Measurement m = measure(s.sampler(), quick());
  EXPECT_EQ(m.stop_reason, StopReason::converged);
  EXPECT_FALSE(m.noisy);
  EXPECT_EQ(m.noise, 0);
  EXPECT_EQ(m.max_noise, quick().max_noise);
}

TEST(Measure, NoisyWorkloadIsMarkedNoisy) {
  ScriptedSampler s{[](int i) { return (i % 2 ? 4 : 1) * kMs; }};
  MeasureOptions o = quick();
  o.timeout_s = 0.05;
  const Measurement m = measure(s.sampler(), o);
  EXPECT_TRUE(m.noisy);
  EXPECT_EQ(m.stop_reason, StopReason::timeout);
  EXPECT_GT(m.noise, o.max_noise);
}

TEST(Measure, ProgressSeesWarmupThenEverySample) {
  ScriptedSampler s{[](int) { return 1 * kMs; }};
  std::vector<MeasureProgress> seen;
  measure(s.sampler(), quick(), [&](const MeasureProgress& p) { seen.push_back(p); });
  ASSERT_EQ(seen.size(), 2u + 5u);
  EXPECT_TRUE(seen[0].warming_up);
  EXPECT_EQ(seen[1].warmup_runs, 2);
  EXPECT_FALSE(seen[2].warming_up);
  EXPECT_EQ(seen[2].samples, 1);
  EXPECT_EQ(seen.back().samples, 5);
  EXPECT_EQ(seen.back().eta_s, 0);
}

TEST(Measure, InvalidOptionsAreUserErrorsBeforeAnyRun) {
  ScriptedSampler s{[](int) { return 1 * kMs; }};
  MeasureOptions o = quick();
  o.max_samples = 2;  // below min_samples
  EXPECT_THROW(measure(s.sampler(), o), UserError);
  EXPECT_EQ(s.calls, 0);
}

TEST(Measure, TimedSamplerRunsTheWorkOncePerSample) {
  int runs = 0;
  const Sampler sampler = timed_sampler([&] { ++runs; });
  const Sample sample = sampler();
  EXPECT_EQ(runs, 1);
  EXPECT_GE(sample.real_ns, 0);
  EXPECT_GE(sample.cpu_ns, 0);
}

}  // namespace
}  // namespace cuvil::bench
