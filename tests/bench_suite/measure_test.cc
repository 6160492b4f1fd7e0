// The measure loop through an injected sampler: warm-up, sampling, verdict, progress.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "base/error.h"
#include "bench_suite/measure.h"
#include "probes/clock.h"

namespace cuvil::bench {
namespace {

constexpr double kMs = 1e6;
constexpr int64_t kSleepNs = 20'000'000;
constexpr int64_t kSpinNs = 20'000'000;

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
  sampler();
  EXPECT_EQ(runs, 1);
}

// A sleep takes at least its length of real time (1% slack: the sleep's clock is NTP-slewed, the
// harness's is CLOCK_MONOTONIC_RAW) and next to no CPU time; a spin takes its length of CPU
// time, and about as much real time or more (one thread).
TEST(Measure, TimedSamplerMeasuresRealAndCpuTimeOfTheWork) {
  const Sample slept =
      timed_sampler([] { std::this_thread::sleep_for(std::chrono::nanoseconds(kSleepNs)); })();
  EXPECT_GE(slept.real_ns, 0.99 * kSleepNs);
  EXPECT_LT(slept.cpu_ns, slept.real_ns / 2);
  const Sample spun = timed_sampler([] {
    const int64_t start = probes::process_cpu_ns();
    while (probes::process_cpu_ns() - start < kSpinNs) {
    }
  })();
  EXPECT_GE(spun.cpu_ns, kSpinNs);
  EXPECT_GE(spun.real_ns, 0.9 * spun.cpu_ns);
}

// Turns of one sample (turn_s 0), no idle time: the schedule is visible call by call.
const InterleaveOptions kOneSampleTurns{{0.0, 0.0, {}}, 0.0};

TEST(MeasureInterleaved, TakesTurnsInARotatingOrderUntilEveryRuleIsMet) {
  std::vector<int> order;
  auto recorder = [&](int id, double ms) {
    return [&order, id, ms] {
      order.push_back(id);
      return Sample{ms * kMs, ms * kMs};
    };
  };
  MeasureOptions o = quick();
  o.warmup_iterations = 1;
  const std::vector<Measurement> m =
      measure_interleaved({recorder(0, 1.0), recorder(1, 3.0)}, o, {}, kOneSampleTurns);
  ASSERT_EQ(m.size(), 2u);
  // Warm-up of each; then turns 0, 1 (round 0), 1, 0 (round 1), ... each turn starting with an
  // untimed run (the first too: workload 1's warm-up ran just before it).
  ASSERT_GE(order.size(), 10u);
  EXPECT_EQ((std::vector<int>(order.begin(), order.begin() + 10)),
            (std::vector<int>{0, 1, 0, 0, 1, 1, 1, 1, 0, 0}));
  for (const Measurement& x : m) {
    EXPECT_GE(x.warmup_real_ns.size(), 2u);
    EXPECT_GE(x.real_ns.size(), 5u);
    EXPECT_EQ(x.stop_reason, StopReason::converged);
    EXPECT_FALSE(x.noisy);
  }
  EXPECT_EQ(m[0].real_ns.front(), 1.0 * kMs);
  EXPECT_EQ(m[1].real_ns.front(), 3.0 * kMs);
}

TEST(MeasureInterleaved, ATurnLastsAboutTurnS) {
  std::vector<int> order;
  auto recorder = [&](int id) {
    return [&order, id] {
      order.push_back(id);
      return Sample{10 * kMs, 10 * kMs};
    };
  };
  MeasureOptions o = quick();
  o.warmup_iterations = 1;
  measure_interleaved({recorder(0), recorder(1)}, o, {}, InterleaveOptions{{0.0, 0.0, {}}, 0.035});
  // After the warm-ups (0, 1): workload 0's first turn, an untimed run and four 10 ms samples,
  // then workload 1's the same.
  ASSERT_GE(order.size(), 12u);
  EXPECT_EQ((std::vector<int>(order.begin(), order.begin() + 12)),
            (std::vector<int>{0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
}

TEST(MeasureInterleaved, AWorkloadMetEarlyKeepsSamplingBesideANoisyOne) {
  ScriptedSampler steady{[](int) { return 1 * kMs; }};
  // Turns begin with an untimed run, so an alternating script would time one value only.
  ScriptedSampler noisy{[](int i) { return (1 + (i * 2654435761u >> 9) % 4) * kMs; }};
  MeasureOptions o = quick();
  o.max_noise = 0.01;
  const std::vector<Measurement> m =
      measure_interleaved({steady.sampler(), noisy.sampler()}, o, {}, kOneSampleTurns);
  EXPECT_FALSE(m[0].noisy);
  EXPECT_TRUE(m[1].noisy);
  // The steady one went on sampling while the noisy one ran to its timeout.
  EXPECT_GT(m[0].real_ns.size(), static_cast<size_t>(o.min_samples));
  EXPECT_LE(m[0].real_ns.size(), static_cast<size_t>(o.max_samples));
}

// A machine that slows by 20% a third of the way through: samples 0..29 at 10 ms, then 12 ms.
double slowing_machine(int i) {
  return (i < 30 ? 10.0 : 12.0) * kMs + (i * 7919) % 101;
}

TEST(Measure, AMachineThatSlowsDuringTheRunMakesItNoisy) {
  ScriptedSampler s{slowing_machine};
  MeasureOptions o = quick();
  o.min_samples = 120;
  o.timeout_s = 100;
  const Measurement m = measure(s.sampler(), o);
  EXPECT_EQ(m.stop_reason, StopReason::converged);
  EXPECT_TRUE(m.drifted);
  EXPECT_NEAR(m.drift_pct, 20, 0.5);
  EXPECT_TRUE(m.noisy);
}

TEST(MeasureInterleaved, ADriftBothWorkloadsMeetIsRecordedButNotNoisy) {
  // Taking turns, both see the machine slow down; their ratio holds.
  int samples = 0;
  auto slowing = [&samples](double scale) {
    return [&samples, scale] { return Sample{scale * slowing_machine(samples++ / 2), 0}; };
  };
  MeasureOptions o = quick();
  o.min_samples = 120;
  o.timeout_s = 100;
  const std::vector<Measurement> m =
      measure_interleaved({slowing(1.0), slowing(2.0)}, o, {}, kOneSampleTurns);
  for (const Measurement& x : m) {
    EXPECT_EQ(x.stop_reason, StopReason::converged);
    EXPECT_TRUE(x.drifted);
    EXPECT_FALSE(x.noisy);
  }
}

TEST(MeasureInterleaved, InvalidOptionsAreUserErrorsBeforeAnyRun) {
  ScriptedSampler s{[](int) { return 1 * kMs; }};
  MeasureOptions o = quick();
  o.max_samples = 2;
  EXPECT_THROW(measure_interleaved({s.sampler()}, o), UserError);
  EXPECT_EQ(s.calls, 0);
}

}  // namespace
}  // namespace cuvil::bench
