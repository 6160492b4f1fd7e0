#include "bench_suite/measure.h"

#include "probes/clock.h"

namespace cuvil::bench {

Measurement measure(runtime::Executor& executor, const std::vector<ir::Tensor>& inputs,
                    const MeasureOptions& options) {
  for (int i = 0; i < options.warmup; ++i) executor.run(inputs);
  Measurement m;
  double measured_ns = 0;
  const double min_time_ns = options.min_time_s * 1e9;
  while (
      static_cast<int>(m.real_ns.size()) < options.max_repetitions &&
      (static_cast<int>(m.real_ns.size()) < options.min_repetitions || measured_ns < min_time_ns)) {
    const int64_t cpu0 = probes::process_cpu_ns();
    const int64_t t0 = probes::now_ns();
    executor.run(inputs);
    const int64_t t1 = probes::now_ns();
    const int64_t cpu1 = probes::process_cpu_ns();
    m.real_ns.push_back(static_cast<double>(t1 - t0));
    m.cpu_ns.push_back(static_cast<double>(cpu1 - cpu0));
    measured_ns += static_cast<double>(t1 - t0);
  }
  return m;
}

}  // namespace cuvil::bench
