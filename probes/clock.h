// The measurement clocks.
//   - now_ns(): CLOCK_MONOTONIC_RAW in nanoseconds (immune to NTP slewing): the harness's clock.
//   - region_now_ns(): the clock of per-op regions, read twice per step. The invariant TSC scaled
//     to nanoseconds where the CPU has one (/proc/cpuinfo: constant_tsc and nonstop_tsc), since
//     it is cheaper to read than clock_gettime, and the kernel's clocksource is "tsc" (the
//     kernel found it stable); CLOCK_MONOTONIC_RAW otherwise. Its scale is calibrated once
//     against CLOCK_MONOTONIC_RAW.
// measure_clocks() measures what each clock resolves and costs per read on this machine;
// clock_report() is that, as text for `cuvil-bench probes` and `run --probes`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CUVIL_HAVE_TSC 1
#else
#define CUVIL_HAVE_TSC 0
#endif

namespace cuvil::probes {

int64_t now_ns();
// CPU time of the whole process (all threads), in nanoseconds.
int64_t process_cpu_ns();

// TSC ticks to nanoseconds: ns = ns0 + (ticks - tick0) * ns_per_tick.
struct TscCalibration {
  bool invariant = false;  // the CPU says constant_tsc and nonstop_tsc
  bool used = false;       // region_now_ns() reads the TSC
  double ns_per_tick = 0;  // measured against CLOCK_MONOTONIC_RAW
  uint64_t tick0 = 0;
  int64_t ns0 = 0;
  double ghz() const { return ns_per_tick > 0 ? 1.0 / ns_per_tick : 0; }
};

// Whether /proc/cpuinfo's flags (of the first CPU) include both constant_tsc and nonstop_tsc.
bool cpu_has_invariant_tsc();
// Parses a /proc/cpuinfo text (testable without the machine).
bool cpuinfo_has_invariant_tsc(const std::string& cpuinfo);

namespace detail {
TscCalibration calibrate_tsc();
}
// Calibrated once, on first use (about 20 ms of spinning against CLOCK_MONOTONIC_RAW). Inline so
// that a region read costs one guard check, not a call.
inline const TscCalibration& tsc_calibration() {
  static const TscCalibration calibration = detail::calibrate_tsc();
  return calibration;
}

inline int64_t tsc_to_ns(const TscCalibration& c, uint64_t ticks) {
  return c.ns0 + static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(ticks - c.tick0)) *
                                      c.ns_per_tick);
}

// The per-op region clock (see the file comment). Call tsc_calibration() once beforehand to keep
// the calibration out of the first region.
inline int64_t region_now_ns() {
#if CUVIL_HAVE_TSC
  const TscCalibration& c = tsc_calibration();
  if (c.used) return tsc_to_ns(c, __rdtsc());
#endif
  return now_ns();
}
// "tsc" or "CLOCK_MONOTONIC_RAW".
std::string region_clock_name();

// One clock, measured here.
struct ClockProperties {
  std::string name;
  double declared_resolution_ns = 0;  // clock_getres (the TSC: one tick)
  double observed_step_ns = 0;        // smallest nonzero difference of back-to-back reads
  double read_overhead_ns = 0;        // median over batches of (batch time / reads)
};

struct ClockReport {
  std::vector<ClockProperties> clocks;  // CLOCK_MONOTONIC_RAW, the process CPU clock, the TSC
  std::string region_clock;             // what per-op regions use
  TscCalibration tsc;
  std::string clocksource;  // the kernel's current clocksource, "" when unknown
};

// About 10 ms of reading clocks.
ClockReport measure_clocks();
std::string format_clock_report(const ClockReport& report);
// measure_clocks(), measured once per process, then formatted: for `cuvil-bench probes`.
std::string clock_report();
const ClockReport& cached_clock_report();

}  // namespace cuvil::probes
