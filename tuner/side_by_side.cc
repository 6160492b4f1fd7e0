#include "tuner/side_by_side.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "base/error.h"
#include "bench_suite/measure.h"
#include "bench_suite/suites.h"
#include "bench_suite/verify.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "stats/mann_whitney.h"
#include "stats/order_statistics.h"
#include "tuner/isolation.h"
#include "tuner/study_trials.h"
#include "tuner/trial.h"

namespace cuvil::tuner {

namespace {

// Exactly `samples` timed runs, no warm-up: one turn of a configuration.
bench::MeasureOptions turn_options(int samples) {
  bench::MeasureOptions m;
  m.warmup_iterations = 0;
  m.warmup_time_s = 0;
  m.min_samples = samples;
  m.max_samples = samples;
  m.min_time_s = 0;
  m.timeout_s = 1e9;  // max_samples ends the turn
  return m;
}

void check_options(const SideBySideOptions& o, size_t configs) {
  if (configs == 0) throw UserError("side-by-side measurement needs at least one configuration");
  if (o.rungs.empty()) throw UserError("side-by-side measurement needs at least one rung");
  if (o.rounds < 1) throw UserError("side-by-side rounds must be at least 1");
  if (o.samples_per_round < 1) throw UserError("side-by-side samples per round must be >= 1");
  if (o.warmup_runs < 0) throw UserError("side-by-side warm-up runs must be >= 0");
}

nlohmann::json result_to_json(const SideBySideResult& r) {
  nlohmann::json rungs = nlohmann::json::array();
  for (const auto& per_config : r.rungs) {
    nlohmann::json list = nlohmann::json::array();
    for (const RungSamples& s : per_config) {
      list.push_back({{"name", s.name}, {"samples_ns", s.samples_ns}, {"median_ms", s.median_ms}});
    }
    rungs.push_back(std::move(list));
  }
  return {{"failure", r.failure}, {"rungs", rungs}};
}

SideBySideResult result_from_json(const nlohmann::json& j) {
  SideBySideResult r;
  r.failure = j.at("failure").get<std::vector<std::string>>();
  for (const auto& list : j.at("rungs")) {
    std::vector<RungSamples> per_config;
    for (const auto& s : list) {
      per_config.push_back({s.at("name").get<std::string>(),
                            s.at("samples_ns").get<std::vector<double>>(),
                            s.at("median_ms").get<double>()});
    }
    r.rungs.push_back(std::move(per_config));
  }
  return r;
}

}  // namespace

SideBySideResult measure_side_by_side(const std::vector<passes::PipelineConfig>& configs,
                                      const SideBySideOptions& o) {
  check_options(o, configs.size());
  const bench::Suite& suite = o.suite;
  SideBySideResult result;
  result.failure.assign(configs.size(), "");
  result.rungs.assign(configs.size(), {});

  if (o.verify) {
    // The gate every trial passes: a configuration that computes the wrong answer is not timed.
    for (size_t c = 0; c < configs.size(); ++c) {
      const bench::VerifyResult check =
          bench::verify_scaled_down(suite, o.rungs.front(), configs[c], o.threads, o.seed, "");
      if (check.ok()) continue;
      double worst = 0;
      for (const auto& out : check.outputs) worst = std::max(worst, out.max_relative_error);
      char text[96];
      std::snprintf(text, sizeof(text), "wrong result (max rel err %.3g > %.0e)", worst,
                    check.tolerance);
      result.failure[c] = text;
    }
  }

  const bench::MeasureOptions turn = turn_options(o.samples_per_round);
  const bench::MeasureOptions warm = turn_options(std::max(1, o.warmup_runs));
  for (const bench::Rung& rung : o.rungs) {
    ir::Graph graph = suite.build(rung, o.tiny);
    const std::vector<ir::Tensor> inputs = ir::random_inputs(graph, o.seed);
    // Every configuration compiled before the first sample: all of them live at once, so the
    // rounds can alternate between them.
    std::vector<std::unique_ptr<runtime::Executor>> executors(configs.size());
    for (size_t c = 0; c < configs.size(); ++c) {
      if (!result.failure[c].empty()) continue;
      passes::Compiled compiled = passes::compile(graph, configs[c], o.threads);
      executors[c] = std::make_unique<runtime::Executor>(std::move(compiled.plan));
      if (o.warmup_runs > 0) bench::measure(*executors[c], inputs, warm);
    }
    std::vector<RungSamples> samples(configs.size());
    for (int round = 0; round < o.rounds; ++round) {
      for (size_t k = 0; k < configs.size(); ++k) {
        // Rotated each round: no configuration always runs right after the same other one.
        const size_t c = (k + static_cast<size_t>(round)) % configs.size();
        if (!executors[c]) continue;
        const bench::Measurement m = bench::measure(*executors[c], inputs, turn);
        samples[c].samples_ns.insert(samples[c].samples_ns.end(), m.real_ns.begin(),
                                     m.real_ns.end());
      }
    }
    for (size_t c = 0; c < configs.size(); ++c) {
      if (!executors[c]) continue;
      samples[c].name = rung.name;
      samples[c].median_ms = stats::median_of(samples[c].samples_ns) * 1e-6;
      result.rungs[c].push_back(std::move(samples[c]));
    }
  }
  return result;
}

SideBySideResult measure_side_by_side_isolated(const std::vector<passes::PipelineConfig>& configs,
                                               const SideBySideOptions& o) {
  check_options(o, configs.size());
  const ChildOutcome outcome = run_isolated(
      [&](ChildChannel& channel) {
        channel.result(result_to_json(measure_side_by_side(configs, o)));
      },
      {}, ChildLimits{o.timeout_s, o.memory_mb});
  if (!outcome.ok) {
    SideBySideResult failed;
    failed.failure.assign(configs.size(), outcome.reason);
    failed.rungs.assign(configs.size(), {});
    return failed;
  }
  return result_from_json(outcome.result);
}

TimeRatio time_ratio(const std::vector<RungSamples>& reference,
                     const std::vector<RungSamples>& candidate, uint64_t seed) {
  CUVIL_CHECK(reference.size() == candidate.size() && !reference.empty(),
              "time_ratio needs the same rungs on both sides");
  TrialRecord ref, cand;
  ref.rungs = reference;
  cand.rungs = candidate;
  ref.value = objective_of(reference);
  cand.value = objective_of(candidate);
  // speedup_interval's "speedup" is its first argument's time over its second's.
  const Speedup s = speedup_interval(cand, ref, 2000, seed);
  TimeRatio r;
  r.ratio = s.value;
  r.low = s.low;
  r.high = s.high;
  r.p_value = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    r.p_value = std::max(
        r.p_value, stats::mann_whitney_u(reference[i].samples_ns, candidate[i].samples_ns).p_value);
  }
  return r;
}

}  // namespace cuvil::tuner
