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
      progress(p);
    }
    if (stop) break;
  }
  m.stop_reason = rule.reason();
  m.noisy = rule.noisy();
  m.noise = rule.noise();
  m.max_noise = options.max_noise;
  return m;
}

Measurement measure(runtime::Executor& executor, const std::vector<ir::Tensor>& inputs,
                    const MeasureOptions& options, const ProgressFn& progress) {
  return measure(timed_sampler([&] { executor.run(inputs); }), options, progress);
}

}  // namespace cuvil::bench
