// The Server scenario's knee search on a simulated fixed-service-time server (an M/D/1 queue),
// checked against the analytic M/D/1 waiting-time distribution.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "bench_suite/serve/server_search.h"

namespace cuvil::bench::serve {
namespace {

constexpr int64_t kNsPerMs = 1000000;

// P(wait <= t) in an M/D/1 queue with arrival rate lambda and service time d (Erlang's formula):
// (1 - rho) * sum_{k=0}^{floor(t/d)} (lambda (k d - t))^k / k! * exp(-lambda (k d - t)).
double md1_wait_cdf(double lambda, double d, double t) {
  double sum = 0;
  for (int k = 0; k <= static_cast<int>(std::floor(t / d)); ++k) {
    const double x = lambda * (k * d - t);
    sum += std::pow(x, k) / std::tgamma(k + 1.0) * std::exp(-x);
  }
  return (1 - lambda * d) * sum;
}

// The highest rate whose p99 latency (wait + service) is within `target`.
double md1_knee(double d, double target) {
  double lo = 0, hi = 1 / d;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (md1_wait_cdf(mid, d, target - d) >= 0.99 ? lo : hi) = mid;
  }
  return lo;
}

TEST(Md1Formula, MatchesKnownValues) {
  EXPECT_NEAR(md1_wait_cdf(0.8, 1.0, 0.0), 0.2, 1e-12);  // P(no wait) = 1 - rho
  EXPECT_NEAR(md1_wait_cdf(0.8, 1.0, 2.0), 0.63452, 1e-4);
}

SearchOptions long_steps(int bisect_steps) {
  SearchOptions o;
  o.load = {50000, 0.0, 11};
  o.bisect_steps = bisect_steps;
  return o;
}

TEST(ServerSearch, FindsTheAnalyticMd1Knee) {
  const double service_s = 0.010, target_ms = 50;  // p99 <= 5 service times
  VirtualClock clock;
  SimulatedSut sut(1, 10 * kNsPerMs);
  const Calibration c = calibrate(sut, clock, 3);
  const ServerCurve curve = search_server(sut, clock, c, {target_ms, 0}, long_steps(8));
  ASSERT_TRUE(curve.knee.has_value()) << curve.note;
  const double knee = curve.steps[*curve.knee].offered_qps;
  const double expected = md1_knee(service_s, target_ms * 1e-3);  // ~56.1 QPS (rho 0.56)
  EXPECT_NEAR(knee, expected, 0.04 * expected);
  EXPECT_LT(knee, 1 / service_s);
  EXPECT_LE(curve.steps[*curve.knee].latency.p99_ms, target_ms);
}

TEST(ServerSearch, LooserTargetMovesTheKneeTowardsCapacity) {
  VirtualClock clock;
  SimulatedSut sut(1, 10 * kNsPerMs);
  const Calibration c = calibrate(sut, clock, 1);
  const ServerCurve tight = search_server(sut, clock, c, {30, 0}, long_steps(6));
  const ServerCurve loose = search_server(sut, clock, c, {100, 0}, long_steps(6));
  ASSERT_TRUE(tight.knee && loose.knee);
  const double tight_qps = tight.steps[*tight.knee].offered_qps;
  const double loose_qps = loose.steps[*loose.knee].offered_qps;
  EXPECT_NEAR(tight_qps, md1_knee(0.010, 0.030), 0.05 * md1_knee(0.010, 0.030));
  EXPECT_NEAR(loose_qps, md1_knee(0.010, 0.100), 0.05 * md1_knee(0.010, 0.100));
  EXPECT_LT(tight_qps, loose_qps);
  EXPECT_LT(loose_qps, 100.0);
}

TEST(ServerSearch, StepsThenBisectsAndKneeIsTheHighestValidRate) {
  VirtualClock clock;
  SimulatedSut sut(1, 10 * kNsPerMs);
  const Calibration c = calibrate(sut, clock, 1);
  const ServerCurve curve = search_server(sut, clock, c, {50, 0}, long_steps(3));
  ASSERT_TRUE(curve.knee.has_value());
  int steps = 0, bisects = 0;
  double highest_valid = 0;
  for (const ScenarioResult& s : curve.steps) {
    (s.phase == "step" ? steps : bisects) += 1;
    if (s.valid) highest_valid = std::max(highest_valid, s.offered_qps);
  }
  EXPECT_EQ(bisects, 3);
  EXPECT_GE(steps, 2);
  EXPECT_GE(curve.steps[steps - 1].load, 1.0);  // stepping went on to saturation
  EXPECT_FALSE(curve.steps[steps - 1].valid);
  EXPECT_EQ(curve.steps[*curve.knee].offered_qps, highest_valid);
}

TEST(ServerSearch, PessimisticCalibrationDoesNotHideTheKnee) {
  // A noisy calibration (60 ms for a 10 ms server) says a 50 ms target is out of reach; the
  // steps show otherwise, and they decide.
  VirtualClock clock;
  SimulatedSut sut(1, 10 * kNsPerMs);
  Calibration c = calibrate(sut, clock, 1);
  c.service_ms = c.first_output_ms = 60;
  ASSERT_TRUE(unreachable_target(c, sut, {50, 0}).has_value());
  const ServerCurve curve = search_server(sut, clock, c, {50, 0}, long_steps(8));
  ASSERT_TRUE(curve.knee.has_value()) << curve.note;
  EXPECT_NEAR(curve.steps[*curve.knee].offered_qps, md1_knee(0.010, 0.050),
              0.04 * md1_knee(0.010, 0.050));
}

TEST(ServerSearch, BisectsBelowTheFirstStepWhenEveryStepMisses) {
  VirtualClock clock;
  SimulatedSut sut(1, 10 * kNsPerMs);
  const Calibration c = calibrate(sut, clock, 1);
  SearchOptions o = long_steps(7);
  o.start_fraction = 0.9;  // 90 QPS already misses a 30 ms target (knee ~32 QPS)
  const ServerCurve curve = search_server(sut, clock, c, {30, 0}, o);
  ASSERT_TRUE(curve.knee.has_value()) << curve.note;
  EXPECT_EQ(curve.steps[*curve.knee].phase, "bisect");
  EXPECT_NEAR(curve.steps[*curve.knee].offered_qps, md1_knee(0.010, 0.030),
              0.08 * md1_knee(0.010, 0.030));
}

TEST(ServerSearch, IsDeterministic) {
  auto knee = [] {
    VirtualClock clock;
    SimulatedSut sut(1, 10 * kNsPerMs);
    SearchOptions o = long_steps(4);
    o.load.min_queries = 500;
    const ServerCurve curve = search_server(sut, clock, calibrate(sut, clock, 1), {40, 0}, o);
    return curve.steps[*curve.knee].offered_qps;
  };
  EXPECT_EQ(knee(), knee());
}

TEST(ServerSearch, BatchingServerKneeIsAboveOneOverServiceTime) {
  VirtualClock clock;
  SimulatedSut sut(4, 10 * kNsPerMs);
  const Calibration c = calibrate(sut, clock, 1);
  const ServerCurve curve = search_server(sut, clock, c, {50, 0}, long_steps(4));
  ASSERT_TRUE(curve.knee.has_value());
  const double knee = curve.steps[*curve.knee].offered_qps;
  EXPECT_GT(knee, 100.0);  // a lone-query server's capacity
  EXPECT_LT(knee, 400.0);  // full batches' capacity
}

TEST(ServerSearch, UnreachableTargetStopsAfterTheLightestStepAndSaysWhy) {
  VirtualClock clock;
  SimulatedSut sut(1, 50 * kNsPerMs);
  const Calibration c = calibrate(sut, clock, 1);
  SearchOptions o = long_steps(4);
  o.load.min_queries = 200;
  const ServerCurve curve = search_server(sut, clock, c, {15, 0}, o);
  EXPECT_FALSE(curve.knee.has_value());
  ASSERT_EQ(curve.steps.size(), 1u);  // not stepped up to saturation
  EXPECT_FALSE(curve.steps[0].valid);
  EXPECT_NE(curve.note.find("no knee"), std::string::npos) << curve.note;
  EXPECT_NE(curve.note.find("exceeds the p99 target"), std::string::npos) << curve.note;
  EXPECT_NE(curve.note.find("stopped"), std::string::npos) << curve.note;
}

TEST(ServerSearch, UnreachableTimeToFirstTokenStopsEarly) {
  VirtualClock clock;
  // TTFT of a lone query is 100 ms: a 50 ms TTFT target is out of reach at any load.
  SimulatedSut sut(1, 100 * kNsPerMs, 4, 10 * kNsPerMs);
  const Calibration c = calibrate(sut, clock, 1);
  SearchOptions o = long_steps(2);
  o.load.min_queries = 100;
  const ServerCurve curve = search_server(sut, clock, c, {50, 0}, o);
  EXPECT_FALSE(curve.knee.has_value());
  EXPECT_EQ(curve.steps.size(), 1u);
  EXPECT_NE(curve.note.find("TTFT"), std::string::npos) << curve.note;
}

TEST(ServerSearch, LlmKneeIsBoundByTimePerOutputToken) {
  VirtualClock clock;
  // TTFT is far within its bound; TPOT is fixed at 40 ms, so the TPOT bound decides alone.
  SimulatedSut sut(1, 100 * kNsPerMs, 4, 40 * kNsPerMs);
  const Calibration c = calibrate(sut, clock, 1);
  SearchOptions o = long_steps(2);
  o.load.min_queries = 300;
  const ServerCurve ok = search_server(sut, clock, c, {5000, 50}, o);
  EXPECT_TRUE(ok.knee.has_value());
  const ServerCurve miss = search_server(sut, clock, c, {5000, 30}, o);
  EXPECT_FALSE(miss.knee.has_value());
  EXPECT_NE(miss.note.find("TPOT"), std::string::npos);
}

TEST(ServerSearch, RejectsBadOptions) {
  VirtualClock clock;
  SimulatedSut sut(1, kNsPerMs);
  const Calibration c = calibrate(sut, clock, 1);
  SearchOptions o;
  o.step_factor = 1.0;
  EXPECT_THROW(search_server(sut, clock, c, {10, 0}, o), UserError);
  o = SearchOptions{};
  o.bisect_steps = -1;
  EXPECT_THROW(search_server(sut, clock, c, {10, 0}, o), UserError);
}

}  // namespace
}  // namespace cuvil::bench::serve
