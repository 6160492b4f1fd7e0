#include "bench_suite/measure.h"

#include <utility>

#include "probes/clock.h"

namespace cuvil::bench {

Sampler timed_sampler(std::function<void()> work) {
  return [work = std::move(work)] {
    const int64_t cpu0 = probes::process_cpu_ns();
    const int64_t t0 = probes::now_ns();
    work();
    const int64_t t1 = probes::now_ns();
    const int64_t cpu1 = probes::process_cpu_ns();
    return Sample{static_cast<double>(t1 - t0), static_cast<double>(cpu1 - cpu0)};
  };
}

Measurement measure(const Sampler& sampler, const MeasureOptions& options,
                    const ProgressFn& progress) {
  options.validate();
  StoppingRule rule(options);
  Measurement m;
  MeasureProgress p;
  double warmup_ns = 0;
  p.warming_up = true;
  while (rule.needs_warmup(static_cast<int64_t>(m.warmup_real_ns.size()), warmup_ns)) {
    const Sample s = sampler();
    m.warmup_real_ns.push_back(s.real_ns);
    warmup_ns += s.real_ns;
    if (progress) {
      p.warmup_runs = static_cast<int64_t>(m.warmup_real_ns.size());
      p.noise = rule.noise();
      p.eta_s = options.timeout_s;
      progress(p);
    }
  }
  p.warming_up = false;
  m.real_ns.reserve(static_cast<size_t>(options.min_samples));
  m.cpu_ns.reserve(static_cast<size_t>(options.min_samples));
  for (;;) {
    const Sample s = sampler();
    m.real_ns.push_back(s.real_ns);
    m.cpu_ns.push_back(s.cpu_ns);
    const bool stop = rule.should_stop(m.real_ns);
    if (progress) {
      p.samples = static_cast<int64_t>(m.real_ns.size());
      p.noise = rule.noise();
      p.eta_s = stop ? 0.0 : rule.eta_s(m.real_ns);
      p.samples_ns = &m.real_ns;
      p.last = stop;
      progress(p);
    }
    if (stop) break;
  }
  rule.judge_drift(m.real_ns);
  m.stop_reason = rule.reason();
  m.noisy = rule.noisy();
  m.drift_pct = rule.drift().spread_pct;
  m.drifted = rule.drifted();
  m.noise = rule.noise();
  m.max_noise = options.max_noise;
  return m;
}

std::vector<Measurement> measure_interleaved(const std::vector<Sampler>& samplers,
                                             const MeasureOptions& options,
                                             const InterleavedProgressFn& progress,
                                             const InterleaveOptions& turns) {
  options.validate();
  const size_t n = samplers.size();
  std::vector<StoppingRule> rules(n, StoppingRule(options));
  std::vector<Measurement> m(n);
  std::vector<double> warmup_ns(n, 0.0);
  std::vector<char> met(n, 0);
  MeasureProgress p;
  // A turn begins once the workloads' processes are quiet, with one untimed run.
  auto begin_turn = [&](size_t i) {
    const Settled settled = settle(turns.settle);
    ++m[i].turns;
    m[i].unsettled_turns += settled.quiet ? 0 : 1;
    m[i].settle_s += settled.waited_s;
    const Sample s = samplers[i]();
    m[i].warmup_real_ns.push_back(s.real_ns);
    warmup_ns[i] += s.real_ns;
  };
  p.warming_up = true;
  for (size_t i = 0; i < n; ++i) {
    begin_turn(i);
    while (rules[i].needs_warmup(static_cast<int64_t>(m[i].warmup_real_ns.size()), warmup_ns[i])) {
      const Sample s = samplers[i]();
      m[i].warmup_real_ns.push_back(s.real_ns);
      warmup_ns[i] += s.real_ns;
    }
    if (progress) {
      p.warmup_runs = static_cast<int64_t>(m[i].warmup_real_ns.size());
      progress(i, p);
    }
  }
  p.warming_up = false;
  for (size_t round = 0;; ++round) {
    bool sampled = false;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (k + round) % n;
      const size_t cap = static_cast<size_t>(options.max_samples);
      if (met[i] && m[i].real_ns.size() >= cap) continue;
      begin_turn(i);  // the first too: the last warm-up was another workload's
      double turn_ns = 0;
      do {
        const Sample s = samplers[i]();
        sampled = true;
        turn_ns += s.real_ns;
        m[i].real_ns.push_back(s.real_ns);
        m[i].cpu_ns.push_back(s.cpu_ns);
        if (!met[i] && rules[i].should_stop(m[i].real_ns)) met[i] = 1;
        if (progress) {
          p.samples = static_cast<int64_t>(m[i].real_ns.size());
          p.noise = rules[i].noise();
          p.eta_s = met[i] ? 0.0 : rules[i].eta_s(m[i].real_ns);
          p.samples_ns = &m[i].real_ns;
          p.last = met[i] != 0;
          progress(i, p);
        }
      } while (turn_ns < turns.turn_s * 1e9 && m[i].real_ns.size() < cap);
    }
    bool all_met = true;
    for (size_t i = 0; i < n; ++i) all_met = all_met && met[i];
    if (all_met || !sampled) break;
  }
  for (size_t i = 0; i < n; ++i) {
    rules[i].judge_drift(m[i].real_ns);  // with the samples taken after the rule was met
    m[i].stop_reason = rules[i].reason();
    // Taking turns, the workloads meet a drift of the machine alike and are read by their
    // ratios: the drift is recorded, but only an unconverged interval makes a row NOISY.
    m[i].noisy = rules[i].unconverged();
    m[i].drift_pct = rules[i].drift().spread_pct;
    m[i].drifted = rules[i].drifted();
    // Samples taken after the rule was met only narrow the interval.
    m[i].noise = m[i].real_ns.size() >= 2 ? relative_median_noise(m[i].real_ns) : rules[i].noise();
    m[i].max_noise = options.max_noise;
  }
  return m;
}

Sampler executor_sampler(runtime::Executor& executor, const std::vector<ir::Tensor>& inputs) {
  executor.check_inputs(inputs);
  std::vector<const float*> views;
  for (const ir::Tensor& t : inputs) views.push_back(t.data.data());
  return timed_sampler([&executor, views = std::move(views)] { executor.execute(views); });
}

Measurement measure(runtime::Executor& executor, const std::vector<ir::Tensor>& inputs,
                    const MeasureOptions& options, const ProgressFn& progress) {
  return measure(executor_sampler(executor, inputs), options, progress);
}

}  // namespace cuvil::bench
