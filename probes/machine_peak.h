// This machine's measured peaks, the denominators of every "% of peak": fp32 FMA throughput and
// memory read bandwidth. Measured once and cached per machine (CPU model, core count, thread
// count) in $XDG_CACHE_HOME/cuvil/ (else ~/.cache/cuvil/); re-measurable on demand.
#pragma once

#include <string>

namespace cuvil::probes {

struct MachinePeak {
  int threads = 1;
  double fp32_gflops = 0;    // all `threads` together, FMA = 2 FLOPs
  double mem_read_gbps = 0;  // streaming reads of a buffer far larger than the caches
  std::string cpu_model;
  std::string isa;          // the FMA width measured: "avx512", "avx2" or "scalar"
  std::string measured_at;  // ISO date
  bool from_cache = false;
};

// Runs the measurement now (about a second).
MachinePeak measure_machine_peak(int threads);
// The cached figures for this machine and thread count, measured (and cached) when missing or
// when `remeasure` is set; a re-measurement keeps the higher of the old and new figures, since a
// busy machine can only make a peak look lower. A cache that cannot be written is not an error: it
// is measured again next time.
MachinePeak machine_peak(int threads, bool remeasure = false);

}  // namespace cuvil::probes
