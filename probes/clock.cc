#include "probes/clock.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "base/text_file.h"
#include "stats/order_statistics.h"

namespace cuvil::probes {

namespace {

int64_t read(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::string current_clocksource() {
  std::string s =
      read_file_or_empty("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

#if CUVIL_HAVE_TSC
// One TSC reading bracketed by two CLOCK_MONOTONIC_RAW readings; the narrowest bracket of a few
// tries, so a preemption between the reads does not skew the calibration.
struct Pair {
  uint64_t ticks;
  int64_t ns;
};
Pair paired_read() {
  Pair best{0, 0};
  int64_t best_width = INT64_MAX;
  for (int i = 0; i < 16; ++i) {
    const int64_t a = now_ns();
    const uint64_t t = __rdtsc();
    const int64_t b = now_ns();
    if (b - a < best_width) {
      best_width = b - a;
      best = {t, a + (b - a) / 2};
    }
  }
  return best;
}
#endif

constexpr int kReadsPerBatch = 1000;
constexpr int kBatches = 21;

// Median over batches of the per-read cost, and the smallest nonzero step seen between
// back-to-back reads; `to_ns` converts a reading's difference to nanoseconds.
template <typename ReadFn, typename ToNs>
void measure_reads(ReadFn read_clock, ToNs to_ns, ClockProperties* p) {
  std::vector<double> per_read;
  double smallest = 0;
  for (int b = 0; b < kBatches; ++b) {
    const int64_t t0 = now_ns();
    auto prev = read_clock();
    for (int i = 0; i < kReadsPerBatch; ++i) {
      const auto cur = read_clock();
      const double step = to_ns(cur - prev);
      if (step > 0 && (smallest == 0 || step < smallest)) smallest = step;
      prev = cur;
    }
    const int64_t t1 = now_ns();
    per_read.push_back(static_cast<double>(t1 - t0) / kReadsPerBatch);
  }
  p->read_overhead_ns = stats::median_of(std::move(per_read));
  p->observed_step_ns = smallest;
}

double declared_resolution(clockid_t id) {
  timespec ts{};
  if (clock_getres(id, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

ClockProperties measure_posix_clock(const char* name, clockid_t id) {
  ClockProperties p;
  p.name = name;
  p.declared_resolution_ns = declared_resolution(id);
  measure_reads([id] { return read(id); }, [](int64_t d) { return static_cast<double>(d); }, &p);
  return p;
}

}  // namespace

int64_t now_ns() {
  return read(CLOCK_MONOTONIC_RAW);
}
int64_t process_cpu_ns() {
  return read(CLOCK_PROCESS_CPUTIME_ID);
}

bool cpuinfo_has_invariant_tsc(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream flags(line.substr(colon + 1));
    bool constant = false, nonstop = false;
    std::string flag;
    while (flags >> flag) {
      constant = constant || flag == "constant_tsc";
      nonstop = nonstop || flag == "nonstop_tsc";
    }
    return constant && nonstop;  // the first CPU's flags speak for all
  }
  return false;
}

bool cpu_has_invariant_tsc() {
  return cpuinfo_has_invariant_tsc(read_file_or_empty("/proc/cpuinfo"));
}

namespace detail {

TscCalibration calibrate_tsc() {
  TscCalibration c;
  c.invariant = cpu_has_invariant_tsc();
#if CUVIL_HAVE_TSC
  if (!c.invariant) return c;
  constexpr int64_t kCalibrationNs = 20'000'000;
  const Pair a = paired_read();
  while (now_ns() - a.ns < kCalibrationNs) {
  }
  const Pair b = paired_read();
  if (b.ticks <= a.ticks) return c;
  c.ns_per_tick = static_cast<double>(b.ns - a.ns) / static_cast<double>(b.ticks - a.ticks);
  c.tick0 = b.ticks;
  c.ns0 = b.ns;
  // A sane TSC runs between 100 MHz and 20 GHz; trust it only where the kernel does too.
  c.used = c.ns_per_tick > 0.05 && c.ns_per_tick < 10 && current_clocksource() == "tsc";
#endif
  return c;
}

}  // namespace detail

std::string region_clock_name() {
  return tsc_calibration().used ? "tsc" : "CLOCK_MONOTONIC_RAW";
}

ClockReport measure_clocks() {
  ClockReport r;
  r.tsc = tsc_calibration();
  r.region_clock = region_clock_name();
  r.clocksource = current_clocksource();
  r.clocks.push_back(measure_posix_clock("CLOCK_MONOTONIC_RAW", CLOCK_MONOTONIC_RAW));
  r.clocks.push_back(measure_posix_clock("CLOCK_PROCESS_CPUTIME_ID", CLOCK_PROCESS_CPUTIME_ID));
#if CUVIL_HAVE_TSC
  if (r.tsc.ns_per_tick > 0) {
    ClockProperties p;
    p.name = "tsc";
    p.declared_resolution_ns = r.tsc.ns_per_tick;
    const double ns_per_tick = r.tsc.ns_per_tick;
    measure_reads([] { return __rdtsc(); },
                  [ns_per_tick](uint64_t d) { return static_cast<double>(d) * ns_per_tick; }, &p);
    r.clocks.push_back(p);
  }
#endif
  return r;
}

std::string format_clock_report(const ClockReport& r) {
  std::string out;
  char buf[256];
  char tsc[64] = "";
  if (r.tsc.ns_per_tick > 0) std::snprintf(tsc, sizeof tsc, ", %.3f GHz calibrated", r.tsc.ghz());
  std::snprintf(buf, sizeof buf,
                "clocks (kernel clocksource %s; invariant TSC %s%s); per-op regions use %s\n",
                r.clocksource.empty() ? "?" : r.clocksource.c_str(), r.tsc.invariant ? "yes" : "no",
                tsc, r.region_clock.c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "  %-26s %14s %14s %14s\n", "clock", "resolution ns",
                "smallest step", "ns per read");
  out += buf;
  for (const ClockProperties& c : r.clocks) {
    std::snprintf(buf, sizeof buf, "  %-26s %14.3f %14.1f %14.1f\n", c.name.c_str(),
                  c.declared_resolution_ns, c.observed_step_ns, c.read_overhead_ns);
    out += buf;
  }
  return out;
}

const ClockReport& cached_clock_report() {
  static const ClockReport report = measure_clocks();
  return report;
}

std::string clock_report() {
  return format_clock_report(cached_clock_report());
}

}  // namespace cuvil::probes
