// The serving load generator on a simulated SUT with a virtual clock: deterministic and instant.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "base/error.h"
#include "bench_suite/serve/arrivals.h"
#include "bench_suite/serve/latency.h"
#include "bench_suite/serve/scenarios.h"
#include "bench_suite/serve/serve_report.h"
#include "bench_suite/serve/sut.h"

namespace cuvil::bench::serve {
namespace {

constexpr int64_t kMs = 1000000;

TEST(PoissonArrivals, InterArrivalMeanAndVarianceMatchTheRate) {
  const double qps = 250;
  const std::vector<int64_t> t = poisson_arrivals(qps, 7, 200000, 0);
  ASSERT_EQ(t.size(), 200000u);
  double sum = 0, sum_sq = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const double gap = static_cast<double>(t[i] - (i ? t[i - 1] : 0)) * 1e-9;
    sum += gap;
    sum_sq += gap * gap;
  }
  const double n = static_cast<double>(t.size());
  const double mean = sum / n, variance = sum_sq / n - mean * mean;
  // Exponential(rate): mean 1/rate, variance 1/rate^2; 200k samples put both within ~1%.
  EXPECT_NEAR(mean, 1 / qps, 0.01 / qps);
  EXPECT_NEAR(variance, 1 / (qps * qps), 0.03 / (qps * qps));
}

TEST(PoissonArrivals, CountsPerWindowHaveEqualMeanAndVariance) {
  const double qps = 17;  // arrivals per 1 s window ~ Poisson(17): mean == variance
  const std::vector<int64_t> t = poisson_arrivals(qps, 3, 1, 20000 * 1000000000ll);
  std::vector<double> counts(20000, 0);
  for (int64_t a : t) {
    if (a < 20000 * 1000000000ll) counts[a / 1000000000ll] += 1;
  }
  const double mean = std::accumulate(counts.begin(), counts.end(), 0.0) / counts.size();
  double var = 0;
  for (double c : counts) var += (c - mean) * (c - mean);
  var /= counts.size();
  EXPECT_NEAR(mean, qps, 0.02 * qps);
  EXPECT_NEAR(var, qps, 0.05 * qps);
}

TEST(PoissonArrivals, SameSeedSameSequenceScaledByTheRate) {
  const auto slow = poisson_arrivals(10, 5, 50, 0);
  const auto fast = poisson_arrivals(20, 5, 50, 0);
  EXPECT_EQ(slow, poisson_arrivals(10, 5, 50, 0));
  for (size_t i = 0; i < slow.size(); ++i) EXPECT_NEAR(slow[i], 2 * fast[i], 2);
  EXPECT_NE(slow, poisson_arrivals(10, 6, 50, 0));
}

TEST(PoissonArrivals, MeetsBothMinimumCountAndDuration) {
  EXPECT_EQ(poisson_arrivals(1000, 1, 7, 0).size(), 7u);
  const auto t = poisson_arrivals(1000, 1, 3, 2000 * kMs);
  EXPECT_GE(t.back(), 2000 * kMs);
  EXPECT_GT(t.size(), 1000u);
}

TEST(PoissonArrivals, RejectsNonPositiveRate) {
  EXPECT_THROW(poisson_arrivals(0, 1, 10, 0), UserError);
  EXPECT_THROW(poisson_arrivals(-3, 1, 10, 0), UserError);
  EXPECT_THROW(poisson_arrivals(5, 1, 0, 0), UserError);
}

TEST(Percentile, NearestRankOfOneToHundred) {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);
  std::reverse(v.begin(), v.end());
  EXPECT_EQ(nearest_rank_percentile(v, 50), 50);
  EXPECT_EQ(nearest_rank_percentile(v, 90), 90);
  EXPECT_EQ(nearest_rank_percentile(v, 99), 99);
  EXPECT_EQ(nearest_rank_percentile(v, 100), 100);
  EXPECT_EQ(nearest_rank_percentile(v, 0.5), 1);
}

TEST(Percentile, NearestRankOfSevenSamples) {
  const std::vector<double> v = {7, 3, 5, 1, 6, 2, 4};
  EXPECT_EQ(nearest_rank_percentile(v, 50), 4);  // ceil(3.5) = 4th
  EXPECT_EQ(nearest_rank_percentile(v, 90), 7);  // ceil(6.3) = 7th
  EXPECT_EQ(nearest_rank_percentile({42}, 99), 42);
}

TEST(Percentile, InexactPercentDoesNotSkipARank) {
  std::vector<double> v(1000);
  std::iota(v.begin(), v.end(), 1.0);
  EXPECT_EQ(nearest_rank_percentile(v, 99.9), 999);
}

TEST(SingleStream, FixedServiceTimeGivesExactLatencyAndRate) {
  VirtualClock clock;
  SimulatedSut sut(1, 7 * kMs);
  const ScenarioResult r = run_single_stream(sut, clock, {17, 0.0, 1});
  EXPECT_EQ(r.queries, 17);
  EXPECT_EQ(r.latency.p50_ms, 7.0);
  EXPECT_EQ(r.latency.p90_ms, 7.0);
  EXPECT_EQ(r.latency.p99_ms, 7.0);
  EXPECT_DOUBLE_EQ(r.achieved_qps, 1000.0 / 7.0);
  EXPECT_FALSE(r.ttft.has_value());
}

TEST(SingleStream, RunsForTheMinimumDuration) {
  VirtualClock clock;
  SimulatedSut sut(1, 3 * kMs);
  const ScenarioResult r = run_single_stream(sut, clock, {1, 0.1, 1});
  EXPECT_EQ(r.queries, 34);  // 34 * 3 ms is the first multiple reaching 100 ms
}

TEST(SingleStream, LlmReportsTimeToFirstTokenAndPerToken) {
  VirtualClock clock;
  SimulatedSut sut(1, 300 * kMs, 3, 40 * kMs);
  const ScenarioResult r = run_single_stream(sut, clock, {5, 0.0, 1});
  ASSERT_TRUE(r.ttft && r.tpot);
  EXPECT_EQ(r.ttft->p99_ms, 300.0);
  EXPECT_EQ(r.tpot->p99_ms, 40.0);
  EXPECT_EQ(r.latency.p99_ms, 420.0);
}

TEST(Offline, BatchesAllQueriesUpToTheBatchSize) {
  VirtualClock clock;
  SimulatedSut sut(4, 10 * kMs);
  const ScenarioResult r = run_offline(sut, clock, 10);  // batches of 4, 4, 2
  EXPECT_EQ(r.queries, 10);
  EXPECT_EQ(r.batches, 3);
  EXPECT_DOUBLE_EQ(r.achieved_qps, 10 / 0.030);
  EXPECT_EQ(r.latency.max_ms, 30.0);
  EXPECT_EQ(r.latency.p50_ms, 20.0);
}

TEST(Offline, RejectsNoQueries) {
  VirtualClock clock;
  SimulatedSut sut(1, kMs);
  EXPECT_THROW(run_offline(sut, clock, 0), UserError);
}

TEST(Server, LightLoadLatencyIsTheServiceTime) {
  VirtualClock clock;
  SimulatedSut sut(1, kMs);
  // 1 QPS against 1 ms service: queueing is rare, so the median is the service time.
  const ScenarioResult r = run_server(sut, clock, 1.0, {101, 0.0, 9});
  EXPECT_EQ(r.queries, 101);
  EXPECT_EQ(r.latency.p50_ms, 1.0);
  EXPECT_NEAR(r.load, 0.001, 1e-12);
}

TEST(Server, QueueingDelayCountsInLatency) {
  VirtualClock clock;
  SimulatedSut sut(1, 10 * kMs);
  const ScenarioResult light = run_server(sut, clock, 20, {3000, 0.0, 4});
  const ScenarioResult heavy = run_server(sut, clock, 90, {3000, 0.0, 4});
  EXPECT_GT(heavy.latency.p99_ms, 2 * light.latency.p99_ms);
  EXPECT_GT(heavy.latency.p50_ms, 10.0);
  EXPECT_GE(light.latency.p50_ms, 10.0);
}

TEST(Server, BatchesWhatHasQueued) {
  VirtualClock clock;
  SimulatedSut sut(8, 10 * kMs);
  // 300 QPS is three times a lone query's capacity: only batching keeps up.
  ScenarioResult r = run_server(sut, clock, 300, {3001, 0.0, 2});
  EXPECT_LT(r.batches, r.queries / 2);
  EXPECT_LT(r.load, 1.0);
  judge(r, {1000.0, 0});
  EXPECT_TRUE(r.valid) << r.verdict;
}

TEST(Judge, OverloadedServerIsInvalidEvenWithinTarget) {
  VirtualClock clock;
  SimulatedSut sut(1, 10 * kMs);
  ScenarioResult r = run_server(sut, clock, 150, {65, 0.0, 1});  // 1.5x capacity, short run
  EXPECT_GT(r.load, 1.0);
  judge(r, {1e9, 0});
  EXPECT_FALSE(r.valid);
  EXPECT_NE(r.verdict.find("overloaded"), std::string::npos);
}

TEST(Judge, LlmIsJudgedOnTtftAndTpot) {
  VirtualClock clock;
  SimulatedSut sut(1, 300 * kMs, 3, 40 * kMs);
  ScenarioResult r = run_single_stream(sut, clock, {3, 0.0, 1});
  judge(r, {350, 50});
  EXPECT_TRUE(r.valid) << r.verdict;  // whole-query latency (420 ms) is not what is bounded
  judge(r, {250, 50});
  EXPECT_FALSE(r.valid);
  EXPECT_NE(r.verdict.find("TTFT"), std::string::npos);
  judge(r, {350, 30});
  EXPECT_FALSE(r.valid);
  EXPECT_NE(r.verdict.find("TPOT"), std::string::npos);
}

TEST(Calibrate, MeasuresTheFixedServiceTime) {
  VirtualClock clock;
  SimulatedSut sut(3, 12 * kMs, 2, 5 * kMs);
  const Calibration c = calibrate(sut, clock, 3);
  EXPECT_EQ(c.batch, 3);
  EXPECT_EQ(c.service_ms, 22.0);
  EXPECT_EQ(c.first_output_ms, 12.0);
  EXPECT_EQ(c.per_token_ms, 5.0);
  EXPECT_DOUBLE_EQ(c.capacity_qps(), 3000.0 / 22.0);
  EXPECT_EQ(unreachable_target(c, sut, {20, 10}), std::nullopt);
  EXPECT_TRUE(unreachable_target(c, sut, {11, 10}).has_value());
  EXPECT_TRUE(unreachable_target(c, sut, {20, 4}).has_value());
}

TEST(SimulatedSut, RejectsBadParameters) {
  EXPECT_THROW(SimulatedSut(0, kMs), UserError);
  EXPECT_THROW(SimulatedSut(1, 0), UserError);
  EXPECT_THROW(SimulatedSut(1, kMs, -1, 0), UserError);
}

// Below 100 queries a nearest-rank p99 is the largest latency: it says nothing about the tail.
TEST(Latency, P99OfFewerThanAHundredQueriesIsTheMaximum) {
  EXPECT_EQ(samples_for_percentile(99), 100);
  EXPECT_EQ(samples_for_percentile(90), 10);
  for (int64_t n : {samples_for_percentile(99) - 1, samples_for_percentile(99)}) {
    std::vector<double> samples(static_cast<size_t>(n));
    std::iota(samples.begin(), samples.end(), 1.0);
    EXPECT_EQ(nearest_rank_percentile(samples, 99) == static_cast<double>(n),
              n < samples_for_percentile(99))
        << n;
  }
}

TEST(Latency, FewQueriesWarnOnlyBelowAHundred) {
  const auto w = few_queries_warning("single-stream", 8);
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("p99 over 8 queries is their maximum"), std::string::npos) << *w;
  EXPECT_NE(w->find("--min-queries"), std::string::npos) << *w;
  EXPECT_FALSE(few_queries_warning("single-stream", 100).has_value());
}

TEST(Latency, ReportWarnsForTheRunWithTheFewestQueries) {
  ServeReport report;
  ScenarioResult a, b;
  a.scenario = b.scenario = "server";
  a.offered_qps = 10;
  a.queries = 500;
  b.offered_qps = 20;
  b.queries = 40;
  report.results = {a, b};
  const auto warnings = report_warnings(report);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("server at 20 QPS: p99 over 40 queries"), std::string::npos)
      << warnings[0];
  report.results[1].queries = 100;
  EXPECT_TRUE(report_warnings(report).empty());
}

}  // namespace
}  // namespace cuvil::bench::serve
