// Counters of the micro-benchmarks, named and flagged one way in all of them.
//
// A counter whose name carries its unit ("GFLOP/s", "GB/s") holds the rate itself, computed over
// the measured loop's own wall time, with no rate flag: Google Benchmark appends "/s" to the
// value of a kIsRate counter ("GB/s=9.661/s"). The share of the machine's measured peak is
// "pct_peak_flops" (and "pct_peak_bw"), as run.json names it; 0 when the peak is unknown.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>

namespace cuvil::bench::micro {

// Wall seconds since construction: start one just before `for (auto _ : state)`.
class LoopTimer {
 public:
  LoopTimer() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// `amount` (over every iteration of the loop) per second of `seconds`, as a plain counter.
inline benchmark::Counter per_second(double amount, double seconds) {
  return benchmark::Counter(seconds > 0 ? amount / seconds : 0.0);
}

// 100 * rate / peak, 0 when the peak is unknown.
inline double pct_of_peak(double rate, double peak) {
  return peak > 0 ? 100.0 * rate / peak : 0.0;
}

}  // namespace cuvil::bench::micro
