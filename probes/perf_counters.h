// Hardware and software event counters through perf_event_open, named as users name them
// (`cycles`, `task-clock`, `LLC-load-misses`, or any libpfm4 event string such as
// `MEM_LOAD_RETIRED.L3_MISS`) and encoded by libpfm4. Counted on every thread of this process
// (one group per thread, summed), read as groups and scaled for multiplexing. An event the
// machine cannot count is reported with supported=false and the reason, never as zero.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cuvil::probes {

struct CounterReading {
  std::string name;        // as the user wrote it
  bool supported = false;  // false: `reason` says why (never report 0 for unsupported)
  std::string reason;      // also set when supported but some threads could not be attached
  uint64_t raw = 0;        // summed over threads
  uint64_t time_enabled_ns = 0, time_running_ns = 0;  // summed over threads
  double scale = 1.0;  // enabled / running (multiplexing); 1 when always counted
  double value = 0;    // raw scaled per thread, summed
};

// One event's counts in PerfCounters::sample(): what CounterReading holds, minus the words.
struct CounterSample {
  uint64_t raw = 0;
  uint64_t time_enabled_ns = 0, time_running_ns = 0;
  double value = 0;  // each thread's raw scaled by its enabled/running, summed
};

class PerfCounters {
 public:
  // Unknown event names -> UserError; known-but-unsupported -> a reading with supported=false.
  // Attaches to the threads that exist now; counting starts with start().
  static PerfCounters open(const std::vector<std::string>& names);
  PerfCounters(PerfCounters&&) noexcept;
  PerfCounters& operator=(PerfCounters&&) noexcept;
  ~PerfCounters();

  // (Re)attach to the process's current threads (call after the Executor made its pool).
  // Threads already attached keep their counts; exited threads keep their final counts.
  void attach_threads();
  void start();
  void stop();
  // Cumulative since open, one per name, in the order given to open().
  std::vector<CounterReading> read() const;
  // The same counts without names or reasons and without allocating once `out` has the size:
  // for reads around every op. Unsupported events stay 0 here; read() says which they are.
  void sample(std::vector<CounterSample>& out) const;

  const std::vector<std::string>& names() const;
  size_t thread_count() const;  // threads attached so far
  // counting_scope() when opened: what the counts include.
  std::string scope() const;

 private:
  struct State;
  explicit PerfCounters(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// One row of `cuvil-bench probes`: a generic event and whether this machine counts it.
struct EventDescription {
  std::string name, kind /*software|hardware|cache|pmu*/, description;
  bool supported = false;
  std::string reason;
};
std::vector<EventDescription> list_events();

// The PMUs libpfm4 recognises on this machine (e.g. "perf", "icl"), with their descriptions and
// whether the kernel exposes a hardware PMU driver for them.
struct PmuDescription {
  std::string name, description;
  int event_count = 0;
  bool hardware = false;  // a core/uncore PMU rather than the perf_events generic tables
};
std::vector<PmuDescription> detected_pmus();

// /proc/sys/kernel/perf_event_paranoid (or -100 when unreadable) and what it allows.
int perf_event_paranoid();
// Whether this process may count kernel-side events: paranoid <= 1, or CAP_PERFMON or
// CAP_SYS_ADMIN in its effective set (root), which the paranoid level does not restrict.
bool kernel_counting_permitted();
// "user+kernel", or "user only (perf_event_paranoid=2, no CAP_PERFMON)": what counts include.
std::string counting_scope();
std::string paranoid_explanation(int level);

// Why perf_event_open failed for an event, in words a user can act on.
std::string explain_open_error(int error_number, const std::string& event_name, bool hardware,
                               int paranoid_level);

// Derived metrics, only where both inputs were counted: ipc (instructions/cycles),
// cache-miss-rate (cache-misses/cache-references), LLC-load-miss-rate, branch-miss-rate,
// L1-dcache-load-miss-rate.
struct DerivedMetric {
  std::string name;
  double value = 0;
  std::string formula;  // e.g. "instructions / cycles"
};
std::vector<DerivedMetric> derived_metrics(const std::vector<CounterReading>& readings);

// One thread's group read (PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING):
// {nr, time_enabled, time_running, value[nr]}. Exposed for tests of the scaling arithmetic.
struct GroupRead {
  uint64_t time_enabled_ns = 0, time_running_ns = 0;
  std::vector<uint64_t> values;
};
GroupRead parse_group_read(const uint64_t* words, size_t word_count);
// Sums one event over threads: raw and time sums, each thread's count scaled by its own
// enabled/running (a thread never scheduled contributes nothing), scale = value / raw.
CounterReading combine_thread_counts(const std::string& name,
                                     const std::vector<GroupRead>& per_thread, size_t index);

}  // namespace cuvil::probes
