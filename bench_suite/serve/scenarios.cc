#include "bench_suite/serve/scenarios.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "bench_suite/serve/arrivals.h"

namespace cuvil::bench::serve {

namespace {

constexpr double kNsPerS = 1e9;

// Per-query timestamps collected by a scenario.
struct Records {
  std::vector<int64_t> latency_ns, ttft_ns, tpot_ns;
  int64_t busy_ns = 0, batches = 0;

  void add_batch(const std::vector<int64_t>& arrivals, int64_t start_ns, const BatchTimes& t,
                 int decode_tokens) {
    ++batches;
    busy_ns += t.done_ns - start_ns;
    for (int64_t arrival : arrivals) {
      latency_ns.push_back(t.done_ns - arrival);
      if (decode_tokens > 0) {
        ttft_ns.push_back(t.first_output_ns - arrival);
        tpot_ns.push_back((t.done_ns - t.first_output_ns) / decode_tokens);
      }
    }
  }

  ScenarioResult result(const std::string& scenario, int64_t elapsed_ns) const {
    ScenarioResult r;
    r.scenario = scenario;
    r.phase = scenario;
    r.queries = static_cast<int64_t>(latency_ns.size());
    r.batches = batches;
    r.latency = latency_stats(latency_ns);
    if (!ttft_ns.empty()) {
      r.ttft = latency_stats(ttft_ns);
      r.tpot = latency_stats(tpot_ns);
    }
    if (elapsed_ns > 0) {
      r.achieved_qps = static_cast<double>(r.queries) * kNsPerS / static_cast<double>(elapsed_ns);
      r.load = static_cast<double>(busy_ns) / static_cast<double>(elapsed_ns);
    }
    return r;
  }
};

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  return buf;
}

}  // namespace

ScenarioResult run_single_stream(Sut& sut, Clock& clock, const LoadOptions& load) {
  Records records;
  const int64_t start = clock.now_ns();
  const int64_t min_ns = static_cast<int64_t>(load.min_duration_s * kNsPerS);
  int64_t queries = 0;
  // The next query is issued the moment the previous one completes.
  while (queries < load.min_queries || clock.now_ns() - start < min_ns) {
    const int64_t issued = clock.now_ns();
    records.add_batch({issued}, issued, sut.process(1, clock), sut.decode_tokens());
    ++queries;
  }
  return records.result("single-stream", clock.now_ns() - start);
}

ScenarioResult run_offline(Sut& sut, Clock& clock, int64_t queries) {
  if (queries < 1) throw UserError("offline: query count must be >= 1");
  Records records;
  const int64_t start = clock.now_ns();
  for (int64_t issued = 0; issued < queries;) {
    const int samples = static_cast<int>(std::min<int64_t>(sut.max_batch(), queries - issued));
    const int64_t batch_start = clock.now_ns();
    const BatchTimes t = sut.process(samples, clock);
    records.add_batch(std::vector<int64_t>(samples, start), batch_start, t, sut.decode_tokens());
    issued += samples;
  }
  return records.result("offline", clock.now_ns() - start);
}

ScenarioResult run_server(Sut& sut, Clock& clock, double offered_qps, const LoadOptions& load) {
  std::vector<int64_t> arrivals =
      poisson_arrivals(offered_qps, load.seed, load.min_queries,
                       static_cast<int64_t>(load.min_duration_s * kNsPerS));
  const int64_t start = clock.now_ns();
  for (int64_t& a : arrivals) a += start;
  Records records;
  const size_t n = arrivals.size();
  // One server, one FIFO queue: the queue is implicit in the arrival schedule. Whenever the
  // server is free it takes every query that has arrived, up to a full batch, without waiting to
  // fill the batch; when nothing is waiting it sleeps until the next arrival.
  for (size_t served = 0; served < n;) {
    if (arrivals[served] > clock.now_ns()) clock.sleep_until_ns(arrivals[served]);
    const int64_t batch_start = clock.now_ns();
    size_t end = served;
    while (end < n && end - served < static_cast<size_t>(sut.max_batch()) &&
           arrivals[end] <= batch_start) {
      ++end;
    }
    const BatchTimes t = sut.process(static_cast<int>(end - served), clock);
    records.add_batch(std::vector<int64_t>(arrivals.begin() + served, arrivals.begin() + end),
                      batch_start, t, sut.decode_tokens());
    served = end;
  }
  ScenarioResult r = records.result("server", clock.now_ns() - start);
  r.phase = "step";
  r.offered_qps = offered_qps;
  r.load =
      offered_qps * static_cast<double>(records.busy_ns) / kNsPerS / static_cast<double>(r.queries);
  return r;
}

void judge(ScenarioResult& r, const LatencyTarget& target) {
  std::string why;
  if (r.ttft) {
    if (r.ttft->p99_ms > target.p99_ms) {
      why = "TTFT p99 " + format_ms(r.ttft->p99_ms) + " > " + format_ms(target.p99_ms);
    } else if (target.tpot_p99_ms > 0 && r.tpot->p99_ms > target.tpot_p99_ms) {
      why = "TPOT p99 " + format_ms(r.tpot->p99_ms) + " > " + format_ms(target.tpot_p99_ms);
    }
  } else if (r.latency.p99_ms > target.p99_ms) {
    why = "p99 " + format_ms(r.latency.p99_ms) + " > " + format_ms(target.p99_ms);
  }
  if (why.empty() && r.scenario == "server" && r.load >= 1.0) {
    // A finite run of an unstable queue understates its p99: in steady state it is unbounded.
    why = "overloaded: offered load >= 1, the queue grows without bound";
  }
  r.valid = why.empty();
  r.verdict = r.valid ? "meets the target" : why;
}

Calibration calibrate(Sut& sut, Clock& clock, int batches) {
  CUVIL_CHECK(batches >= 1, "calibration needs a batch");
  sut.process(sut.max_batch(), clock);  // warm-up: first-touch allocation, caches
  std::vector<double> service, first, token;
  for (int i = 0; i < batches; ++i) {
    const int64_t start = clock.now_ns();
    const BatchTimes t = sut.process(sut.max_batch(), clock);
    service.push_back(static_cast<double>(t.done_ns - start) * 1e-6);
    first.push_back(static_cast<double>(t.first_output_ns - start) * 1e-6);
    if (sut.decode_tokens() > 0) {
      token.push_back(static_cast<double>(t.done_ns - t.first_output_ns) * 1e-6 /
                      sut.decode_tokens());
    }
  }
  Calibration c;
  c.batch = sut.max_batch();
  c.service_ms = nearest_rank_percentile(service, 50);
  c.first_output_ms = nearest_rank_percentile(first, 50);
  if (!token.empty()) c.per_token_ms = nearest_rank_percentile(token, 50);
  return c;
}

std::optional<std::string> unreachable_target(const Calibration& c, const Sut& sut,
                                              const LatencyTarget& target) {
  if (sut.decode_tokens() > 0) {
    if (c.first_output_ms > target.p99_ms) {
      return "time to first token of a lone batch (" + format_ms(c.first_output_ms) +
             ") exceeds the TTFT target (" + format_ms(target.p99_ms) + ")";
    }
    if (target.tpot_p99_ms > 0 && c.per_token_ms > target.tpot_p99_ms) {
      return "time per output token of a lone batch (" + format_ms(c.per_token_ms) +
             ") exceeds the TPOT target (" + format_ms(target.tpot_p99_ms) + ")";
    }
    return std::nullopt;
  }
  if (c.service_ms > target.p99_ms) {
    return "service time of a lone batch (" + format_ms(c.service_ms) +
           ") exceeds the p99 target (" + format_ms(target.p99_ms) + ")";
  }
  return std::nullopt;
}

}  // namespace cuvil::bench::serve
