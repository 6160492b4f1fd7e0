// The measurement loop: warm-up, then timed iterations of a compiled plan until both a minimum
// repetition count and a minimum time are reached (or a maximum count). Every sample is kept.
// `run`, `tune` and the nightly job all measure through this one function.
#pragma once

#include <cstdint>
#include <vector>

#include "passes/ir/tensor.h"
#include "runtime/executor.h"

namespace cuvil::bench {

struct MeasureOptions {
  int warmup = 1;
  int min_repetitions = 3;
  int max_repetitions = 100;
  double min_time_s = 1.0;  // keep sampling until this much time was measured
};

struct Measurement {
  std::vector<double> real_ns;  // wall time per iteration
  std::vector<double> cpu_ns;   // process CPU time per iteration (all threads)
};

Measurement measure(runtime::Executor& executor, const std::vector<ir::Tensor>& inputs,
                    const MeasureOptions& options);

}  // namespace cuvil::bench
