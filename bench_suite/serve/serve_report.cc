#include "bench_suite/serve/serve_report.h"

#include <cstdio>

#include "bench_suite/serve/latency.h"

#include <algorithm>
#include <numeric>

namespace cuvil::bench::serve {

namespace {

nlohmann::json stats_json(const LatencyStats& s) {
  return {{"mean_ms", s.mean_ms},
          {"p50_ms", s.p50_ms},
          {"p90_ms", s.p90_ms},
          {"p99_ms", s.p99_ms},
          {"max_ms", s.max_ms}};
}

nlohmann::json result_json(const ScenarioResult& r) {
  nlohmann::json j = {{"scenario", r.scenario},
                      {"phase", r.phase},
                      {"offered_qps", r.offered_qps},
                      {"achieved_qps", r.achieved_qps},
                      {"queries", r.queries},
                      {"batches", r.batches},
                      {"latency", stats_json(r.latency)},
                      {"load", r.load},
                      {"valid", r.valid},
                      {"verdict", r.verdict}};
  if (r.ttft) j["ttft"] = stats_json(*r.ttft);
  if (r.tpot) j["tpot"] = stats_json(*r.tpot);
  return j;
}

// The latency that the target bounds: TTFT for a SUT with decode tokens.
const LatencyStats& judged(const ScenarioResult& r) {
  return r.ttft ? *r.ttft : r.latency;
}

}  // namespace

void print_table(std::FILE* out, const ServeReport& rep) {
  const bool llm = !rep.results.empty() && rep.results.front().ttft.has_value();
  std::fprintf(out, "serve %s/%s, scenario %s: %s, batch %lld, %d thread(s)\n", rep.suite.c_str(),
               rep.rung.c_str(), rep.scenario.c_str(), rep.query.c_str(),
               static_cast<long long>(rep.calibration.batch), rep.threads);
  std::fprintf(out, "calibration: %.3f ms per batch (first output %.3f ms",
               rep.calibration.service_ms, rep.calibration.first_output_ms);
  if (llm) std::fprintf(out, ", %.3f ms per token", rep.calibration.per_token_ms);
  std::fprintf(out, "), capacity %.4g QPS\n", rep.calibration.capacity_qps());
  if (llm) {
    std::fprintf(out, "target: TTFT p99 <= %g ms, TPOT p99 <= %g ms\n", rep.target.p99_ms,
                 rep.target.tpot_p99_ms);
  } else {
    std::fprintf(out, "target: p99 <= %g ms\n", rep.target.p99_ms);
  }
  std::vector<size_t> order(rep.results.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return rep.results[a].offered_qps < rep.results[b].offered_qps;
  });
  const char* what = llm ? "TTFT" : "lat.";
  std::fprintf(out, "%-13s %11s %12s %7s %11s %11s %11s", "phase", "offered QPS", "achieved QPS",
               "queries", (std::string(what) + " p50 ms").c_str(),
               (std::string(what) + " p90 ms").c_str(), (std::string(what) + " p99 ms").c_str());
  if (llm) std::fprintf(out, " %11s", "TPOT p99 ms");
  std::fprintf(out, " %6s  %s\n", "load", "result");
  for (size_t i : order) {
    const ScenarioResult& r = rep.results[i];
    const LatencyStats& l = judged(r);
    char offered[32] = "-";
    if (r.offered_qps > 0) std::snprintf(offered, sizeof offered, "%.4g", r.offered_qps);
    std::fprintf(out, "%-13s %11s %12.4g %7lld %11.3f %11.3f %11.3f", r.phase.c_str(), offered,
                 r.achieved_qps, static_cast<long long>(r.queries), l.p50_ms, l.p90_ms, l.p99_ms);
    if (llm) std::fprintf(out, " %11.3f", r.tpot->p99_ms);
    std::string result = r.scenario != "server" ? "-" : r.valid ? "ok" : "MISS: " + r.verdict;
    if (rep.knee && *rep.knee == i) result += "   <- knee";
    std::fprintf(out, " %6.2f  %s\n", r.load, result.c_str());
  }
  if (rep.knee) {
    const ScenarioResult& k = rep.results[*rep.knee];
    std::fprintf(out, "knee: %.4g QPS offered (%.4g achieved) with %s p99 %.3f ms\n", k.offered_qps,
                 k.achieved_qps, llm ? "TTFT" : "latency", judged(k).p99_ms);
  }
  if (!rep.note.empty()) std::fprintf(out, "%s\n", rep.note.c_str());
}

nlohmann::json report_json(const ServeReport& rep) {
  nlohmann::json j;
  j["suite"] = rep.suite;
  j["rung"] = rep.rung;
  j["scenario"] = rep.scenario;
  j["query"] = rep.query;
  j["threads"] = rep.threads;
  j["targets"] = {{"p99_ms", rep.target.p99_ms}};
  if (rep.target.tpot_p99_ms > 0) j["targets"]["tpot_p99_ms"] = rep.target.tpot_p99_ms;
  j["load"] = {{"min_queries", rep.load.min_queries},
               {"min_duration_s", rep.load.min_duration_s},
               {"seed", rep.load.seed}};
  j["calibration"] = {{"batch", rep.calibration.batch},
                      {"service_ms", rep.calibration.service_ms},
                      {"first_output_ms", rep.calibration.first_output_ms},
                      {"per_token_ms", rep.calibration.per_token_ms},
                      {"capacity_qps", rep.calibration.capacity_qps()}};
  j["curve"] = nlohmann::json::array();
  for (const ScenarioResult& r : rep.results) j["curve"].push_back(result_json(r));
  j["knee"] = rep.knee ? result_json(rep.results[*rep.knee]) : nlohmann::json(nullptr);
  j["note"] = rep.note;
  j["warnings"] = rep.warnings;
  return j;
}

std::vector<std::string> report_warnings(const ServeReport& report) {
  std::vector<std::string> warnings;
  const ScenarioResult* fewest = nullptr;
  for (const ScenarioResult& r : report.results) {
    if (fewest == nullptr || r.queries < fewest->queries) fewest = &r;
  }
  if (fewest != nullptr) {
    std::string what = fewest->scenario;
    if (report.results.size() > 1) {
      char qps[48];
      std::snprintf(qps, sizeof qps, " at %.4g QPS", fewest->offered_qps);
      what += qps;
    }
    if (auto w = few_queries_warning(what, fewest->queries)) warnings.push_back(std::move(*w));
  }
  return warnings;
}

}  // namespace cuvil::bench::serve
