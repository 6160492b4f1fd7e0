// cuvil-harness-overhead: what the measurement harness itself costs, measured by running the
// real measure() loop on an empty workload.
//   - bias per sample: the time an empty workload reads as (the clock calls inside the timed
//     region); every sample of a real workload includes it.
//   - cost per sample: wall time of the whole loop (clocks, bookkeeping, the stopping rule)
//     divided by the runs; it is spent between samples, not inside them.
//   - noise evaluation: the stopping rule fed a stream that never gets quiet (its worst case:
//     the noise re-evaluated at every 5% growth up to max_samples), per sample.
//   - summary cost: cuvil::stats::summarize() once at the end (percentiles and the bootstrap
//   interval).
// Usage: cuvil-harness-overhead [samples per round, default 10000] [rounds, default 5]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_suite/measure.h"
#include "probes/clock.h"
#include "stats/summary.h"

namespace {}  // namespace

int main(int argc, char** argv) {
  using namespace cuvil::bench;
  const int samples = argc > 1 ? std::max(10, std::atoi(argv[1])) : 10000;
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  MeasureOptions o;
  o.warmup_iterations = 100;
  o.warmup_time_s = 0;
  o.min_samples = samples;  // an empty workload's samples are quiet at once: take them all
  o.max_samples = samples;
  o.min_time_s = 0;
  o.timeout_s = 3600;
  std::vector<double> bias_ns, cost_ns, summary_ms, noise_ns;
  for (int r = 0; r < rounds; ++r) {
    const Sampler empty = timed_sampler([] {});
    const int64_t t0 = cuvil::probes::now_ns();
    const Measurement m = measure(empty, o);
    const int64_t t1 = cuvil::probes::now_ns();
    const cuvil::stats::Summary s = cuvil::stats::summarize(m.real_ns);
    const int64_t t2 = cuvil::probes::now_ns();
    const double runs = static_cast<double>(m.real_ns.size() + m.warmup_real_ns.size());
    bias_ns.push_back(s.median);
    cost_ns.push_back(static_cast<double>(t1 - t0) / runs);
    summary_ms.push_back(static_cast<double>(t2 - t1) * 1e-6);

    StoppingCriteria never_quiet = o;
    never_quiet.min_samples = 1;
    StoppingRule rule(never_quiet);
    std::vector<double> stream;
    stream.reserve(static_cast<size_t>(samples));
    const int64_t t3 = cuvil::probes::now_ns();
    for (int i = 0; i < samples; ++i) {
      stream.push_back(i % 2 ? 3e6 : 1e6);
      if (rule.should_stop(stream)) break;
    }
    const int64_t t4 = cuvil::probes::now_ns();
    noise_ns.push_back(static_cast<double>(t4 - t3) / static_cast<double>(stream.size()));
  }
  std::printf("harness overhead over %d round(s) of %d samples (medians across rounds):\n", rounds,
              samples);
  std::printf("  bias per sample (empty workload reads as): %8.1f ns\n",
              cuvil::stats::median_of(bias_ns));
  std::printf("  cost per sample (whole loop, wall / run):  %8.1f ns\n",
              cuvil::stats::median_of(cost_ns));
  std::printf("  stopping rule, never-quiet stream:         %8.1f ns\n",
              cuvil::stats::median_of(noise_ns));
  std::printf("  summarize() of %d samples:               %8.2f ms\n", samples,
              cuvil::stats::median_of(summary_ms));
  return 0;
}
