#include "probes/perf_counters.h"

#include <linux/perf_event.h>  // before libpfm4, whose copy then steps aside
#include <perfmon/pfmlib_perf_event.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "base/error.h"
#include "probes/perf_counters_internal.h"

namespace cuvil::probes {

namespace {

constexpr uint64_t kGroupReadFormat =
    PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
// Hardware groups stay small so that each fits the PMU's counters and groups multiplex.
constexpr size_t kMaxHardwareGroupSize = 4;

struct Event {
  std::string name;
  perf_event_attr attr{};
  bool hardware = false;
  bool supported = false;
  std::string reason;
  size_t group = 0, index_in_group = 0;
};

// The fds of one thread's groups; leaders[g] reads group g.
struct ThreadFds {
  pid_t tid = 0;
  std::vector<int> leaders;
  std::vector<int> fds;
};

void close_all(std::vector<int>& fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  fds.clear();
}

// Opens the group's events on `tid`; false (and nothing left open) when any of them fails.
bool open_group(const std::vector<Event>& events, const std::vector<size_t>& members, pid_t tid,
                ThreadFds& out, int* error_number) {
  int leader = -1;
  std::vector<int> opened;
  for (size_t i : members) {
    perf_event_attr attr = events[i].attr;
    attr.read_format = kGroupReadFormat;
    attr.disabled = leader < 0 ? 1 : 0;  // members follow their leader
    attr.inherit = 0;  // inherit cannot be read as a group on many kernels: one group per thread
    const int fd = detail::perf_event_open(&attr, tid, -1, leader, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
      *error_number = errno;
      close_all(opened);
      return false;
    }
    if (leader < 0) leader = fd;
    opened.push_back(fd);
  }
  out.leaders.push_back(leader);
  out.fds.insert(out.fds.end(), opened.begin(), opened.end());
  return true;
}

}  // namespace

struct PerfCounters::State {
  std::vector<std::string> names;
  std::vector<Event> events;
  std::vector<std::vector<size_t>> groups;  // indices into events, supported ones only
  std::vector<ThreadFds> threads;
  bool running = false;
  std::string scope;
  size_t threads_missed = 0;  // threads that could not be attached, and why
  std::string missed_reason;
  ~State() {
    for (ThreadFds& thread : threads) close_all(thread.fds);
  }
};

PerfCounters::PerfCounters(std::unique_ptr<State> state) : state_(std::move(state)) {}
PerfCounters::PerfCounters(PerfCounters&&) noexcept = default;
PerfCounters& PerfCounters::operator=(PerfCounters&&) noexcept = default;
PerfCounters::~PerfCounters() = default;

PerfCounters PerfCounters::open(const std::vector<std::string>& names) {
  auto state = std::make_unique<State>();
  state->names = names;
  const int paranoid = perf_event_paranoid();
  state->scope = counting_scope();
  // Encode everything first: an unknown name is the user's mistake, whatever else happens.
  for (const std::string& name : names) {
    Event event;
    event.name = name;
    event.attr = detail::encode_event(name);
    event.hardware = detail::is_hardware(event.attr);
    state->events.push_back(std::move(event));
  }
  // Which events this machine counts: each alone, on this thread.
  for (Event& event : state->events) {
    perf_event_attr attr = event.attr;
    attr.disabled = 1;
    const int fd = detail::perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
      event.reason = explain_open_error(errno, event.name, event.hardware, paranoid);
      continue;
    }
    ::close(fd);
    event.supported = true;
  }
  // Groups: every software event in one, hardware events in small groups; a member the kernel
  // refuses to co-schedule with its group gets a group of its own.
  std::vector<size_t> software, hardware;
  for (size_t i = 0; i < state->events.size(); ++i) {
    if (!state->events[i].supported) continue;
    (state->events[i].hardware ? hardware : software).push_back(i);
  }
  auto add_group = [&](std::vector<size_t> members) {
    if (members.empty()) return;
    ThreadFds probe;
    int error_number = 0;
    if (open_group(state->events, members, 0, probe, &error_number)) {
      close_all(probe.fds);
      state->groups.push_back(std::move(members));
      return;
    }
    for (size_t i : members) state->groups.push_back({i});
  };
  add_group(software);
  for (size_t begin = 0; begin < hardware.size(); begin += kMaxHardwareGroupSize) {
    const size_t end = std::min(hardware.size(), begin + kMaxHardwareGroupSize);
    add_group(std::vector<size_t>(hardware.begin() + begin, hardware.begin() + end));
  }
  for (size_t g = 0; g < state->groups.size(); ++g) {
    for (size_t k = 0; k < state->groups[g].size(); ++k) {
      state->events[state->groups[g][k]].group = g;
      state->events[state->groups[g][k]].index_in_group = k;
    }
  }
  PerfCounters counters(std::move(state));
  counters.attach_threads();
  return counters;
}

void PerfCounters::attach_threads() {
  State& s = *state_;
  for (pid_t tid : detail::thread_ids()) {
    const bool known = std::any_of(s.threads.begin(), s.threads.end(),
                                   [tid](const ThreadFds& t) { return t.tid == tid; });
    if (known) continue;
    ThreadFds thread;
    thread.tid = tid;
    bool complete = true;
    for (const std::vector<size_t>& group : s.groups) {
      int error_number = 0;
      if (!open_group(s.events, group, tid, thread, &error_number)) {
        complete = false;
        // A thread that exited meanwhile (ESRCH) is no loss; anything else leaves it uncounted.
        if (error_number != ESRCH) {
          ++s.threads_missed;
          s.missed_reason = detail::errno_text(error_number);
          if (error_number == EMFILE) s.missed_reason += ": raise `ulimit -n`";
        }
        break;
      }
    }
    if (!complete) {
      close_all(thread.fds);
      continue;
    }
    if (s.running) {
      for (int leader : thread.leaders) ioctl(leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
    }
    s.threads.push_back(std::move(thread));
  }
}

void PerfCounters::start() {
  for (const ThreadFds& thread : state_->threads) {
    for (int leader : thread.leaders) ioctl(leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
  }
  state_->running = true;
}

void PerfCounters::stop() {
  for (const ThreadFds& thread : state_->threads) {
    for (int leader : thread.leaders) ioctl(leader, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
  }
  state_->running = false;
}

std::vector<CounterReading> PerfCounters::read() const {
  const State& s = *state_;
  // per_group[g][thread]: the group's read on each attached thread.
  std::vector<std::vector<GroupRead>> per_group(s.groups.size());
  uint64_t words[3 + 64];
  for (const ThreadFds& thread : s.threads) {
    for (size_t g = 0; g < thread.leaders.size(); ++g) {
      const ssize_t bytes = ::read(thread.leaders[g], words, sizeof words);
      if (bytes <= 0) continue;
      per_group[g].push_back(parse_group_read(words, static_cast<size_t>(bytes) / 8));
    }
  }
  std::vector<CounterReading> readings;
  for (const Event& event : s.events) {
    if (!event.supported) {
      CounterReading reading;
      reading.name = event.name;
      reading.reason = event.reason;
      readings.push_back(std::move(reading));
      continue;
    }
    readings.push_back(
        combine_thread_counts(event.name, per_group[event.group], event.index_in_group));
    if (readings.back().supported && s.threads_missed > 0) {
      // Counted, but not everywhere: say so rather than pass a partial sum off as the whole.
      readings.back().reason = "counted on " + std::to_string(s.threads.size()) + " threads; " +
                               std::to_string(s.threads_missed) + " could not be attached (" +
                               s.missed_reason + ")";
    }
  }
  return readings;
}

void PerfCounters::sample(std::vector<CounterSample>& out) const {
  const State& s = *state_;
  out.assign(s.events.size(), CounterSample{});
  uint64_t words[3 + 64];
  for (const ThreadFds& thread : s.threads) {
    for (size_t g = 0; g < thread.leaders.size(); ++g) {
      const ssize_t bytes = ::read(thread.leaders[g], words, sizeof words);
      if (bytes < 24) continue;
      const uint64_t enabled = words[1], running = words[2];
      const std::vector<size_t>& members = s.groups[g];
      const size_t count = std::min<size_t>(
          {static_cast<size_t>(words[0]), static_cast<size_t>(bytes) / 8 - 3, members.size()});
      for (size_t k = 0; k < count; ++k) {
        CounterSample& sample = out[members[k]];
        sample.raw += words[3 + k];
        sample.time_enabled_ns += enabled;
        sample.time_running_ns += running;
        if (running > 0) {
          sample.value += static_cast<double>(words[3 + k]) * static_cast<double>(enabled) /
                          static_cast<double>(running);
        }
      }
    }
  }
}

const std::vector<std::string>& PerfCounters::names() const {
  return state_->names;
}
size_t PerfCounters::thread_count() const {
  return state_->threads.size();
}
std::string PerfCounters::scope() const {
  return state_->scope;
}

GroupRead parse_group_read(const uint64_t* words, size_t word_count) {
  GroupRead read;
  if (word_count < 3) return read;
  const uint64_t nr = std::min<uint64_t>(words[0], word_count - 3);
  read.time_enabled_ns = words[1];
  read.time_running_ns = words[2];
  read.values.assign(words + 3, words + 3 + nr);
  return read;
}

CounterReading combine_thread_counts(const std::string& name,
                                     const std::vector<GroupRead>& per_thread, size_t index) {
  CounterReading reading;
  reading.name = name;
  reading.supported = true;
  double value = 0;
  for (const GroupRead& thread : per_thread) {
    if (index >= thread.values.size()) continue;
    const uint64_t raw = thread.values[index];
    reading.raw += raw;
    reading.time_enabled_ns += thread.time_enabled_ns;
    reading.time_running_ns += thread.time_running_ns;
    if (thread.time_running_ns > 0) {
      value += static_cast<double>(raw) * static_cast<double>(thread.time_enabled_ns) /
               static_cast<double>(thread.time_running_ns);
    }
  }
  reading.value = value;
  if (reading.time_running_ns > 0) {
    reading.scale =
        static_cast<double>(reading.time_enabled_ns) / static_cast<double>(reading.time_running_ns);
  } else if (reading.time_enabled_ns > 0) {
    // Enabled but never on a counter: the count is unknown, which is not zero.
    reading.supported = false;
    reading.reason =
        "never scheduled on a counter while enabled (more events than the PMU has counters); "
        "request fewer hardware events";
  }
  return reading;
}

int perf_event_paranoid() {
  std::ifstream file("/proc/sys/kernel/perf_event_paranoid");
  int level = -100;
  if (!(file >> level)) return -100;
  return level;
}

bool kernel_counting_permitted() {
  const int paranoid = perf_event_paranoid();
  if (paranoid != -100 && paranoid < 2) return true;
  // CapEff is hex; CAP_SYS_ADMIN is bit 21, CAP_PERFMON bit 38 (Linux 5.8+).
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    const unsigned long long caps = std::strtoull(line.c_str() + 7, nullptr, 16);
    return (caps & (1ull << 21)) != 0 || (caps & (1ull << 38)) != 0;
  }
  return false;
}

std::string counting_scope() {
  if (kernel_counting_permitted()) return "user+kernel";
  return "user only (perf_event_paranoid=" + std::to_string(perf_event_paranoid()) +
         ", no CAP_PERFMON)";
}

std::string paranoid_explanation(int level) {
  if (level == -100) return "/proc/sys/kernel/perf_event_paranoid is unreadable";
  const std::string prefix = "kernel.perf_event_paranoid=" + std::to_string(level) + ": ";
  if (level <= -1) return prefix + "no restrictions";
  if (level == 0) return prefix + "user and kernel counting, no raw tracepoints for users";
  if (level == 1) return prefix + "user and kernel counting of one's own processes";
  if (level == 2) {
    return prefix +
           "user-space counting and sampling of one's own processes only (kernel time excluded); "
           "`sudo sysctl kernel.perf_event_paranoid=1` also counts kernel time";
  }
  return prefix +
         "perf_event_open is forbidden to unprivileged users; `sudo sysctl "
         "kernel.perf_event_paranoid=2` (user space) or CAP_PERFMON allows it";
}

std::string explain_open_error(int error_number, const std::string& event_name, bool hardware,
                               int paranoid_level) {
  const std::string what =
      "perf_event_open(" + event_name + ") failed with " + detail::errno_text(error_number) + ": ";
  switch (error_number) {
    case ENOENT:
    case EOPNOTSUPP:
      if (hardware && !detail::kernel_has_core_pmu()) {
        return what +
               "not supported: the kernel has no hardware PMU on this machine (no cpu device "
               "under /sys/bus/event_source/devices; typically a virtual machine whose "
               "hypervisor does not expose performance counters), so it cannot count " +
               event_name;
      }
      return what + "not supported: this CPU's PMU (or the kernel's driver for it) has no such " +
             "event";
    case EACCES:
    case EPERM:
      return what + "not permitted: " + paranoid_explanation(paranoid_level);
    case EINVAL:
      return what + "the kernel rejected the encoding (an event or modifier this CPU's PMU " +
             "does not accept)";
    case ENODEV:
      return what + "no such PMU device in this kernel";
    case ENOSPC:
      return what + "no free hardware counter (another tool, e.g. the NMI watchdog, holds them)";
    case EMFILE:
      return what + "too many open files: raise `ulimit -n` (one fd per event per thread)";
    case EBUSY:
      return what + "the PMU is held exclusively by another user";
    default:
      return what + "not counted";
  }
}

namespace {

struct GenericEvent {
  const char* name;
  const char* kind;
  const char* description;
};

constexpr GenericEvent kGenericEvents[] = {
    {"cycles", "hardware", "CPU cycles"},
    {"instructions", "hardware", "instructions retired"},
    {"cache-references", "hardware", "last-level cache references"},
    {"cache-misses", "hardware", "last-level cache misses"},
    {"branches", "hardware", "branch instructions retired"},
    {"branch-misses", "hardware", "mispredicted branches"},
    {"LLC-loads", "cache", "last-level cache loads"},
    {"LLC-load-misses", "cache", "last-level cache load misses"},
    {"L1-dcache-loads", "cache", "L1 data cache loads"},
    {"L1-dcache-load-misses", "cache", "L1 data cache load misses"},
    {"task-clock", "software", "CPU time of the threads, ns"},
    {"cpu-clock", "software", "CPU clock timer, ns"},
    {"context-switches", "software", "context switches"},
    {"cpu-migrations", "software", "moves between CPUs"},
    {"page-faults", "software", "page faults"},
    {"minor-faults", "software", "page faults served without I/O"},
    {"major-faults", "software", "page faults that needed I/O"},
};

}  // namespace

std::vector<EventDescription> list_events() {
  detail::ensure_libpfm();
  const int paranoid = perf_event_paranoid();
  std::vector<EventDescription> rows;
  for (const GenericEvent& generic : kGenericEvents) {
    EventDescription row{generic.name, generic.kind, generic.description, false, ""};
    try {
      perf_event_attr attr = detail::encode_event(generic.name);
      attr.disabled = 1;
      const int fd = detail::perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
      if (fd < 0) {
        row.reason = explain_open_error(errno, generic.name, detail::is_hardware(attr), paranoid);
      } else {
        ::close(fd);
        row.supported = true;
      }
    } catch (const UserError& error) {
      row.reason = error.what();
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<PmuDescription> detected_pmus() {
  detail::ensure_libpfm();
  std::vector<PmuDescription> pmus;
  for (int p = PFM_PMU_NONE; p < PFM_PMU_MAX; ++p) {
    pfm_pmu_info_t info;
    std::memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (pfm_get_pmu_info(static_cast<pfm_pmu_t>(p), &info) != PFM_SUCCESS) continue;
    if (!info.is_present) continue;
    PmuDescription pmu;
    pmu.name = info.name != nullptr ? info.name : "?";
    pmu.description = info.desc != nullptr ? info.desc : "";
    pmu.event_count = info.nevents;
    pmu.hardware = info.type == PFM_PMU_TYPE_CORE || info.type == PFM_PMU_TYPE_UNCORE;
    pmus.push_back(std::move(pmu));
  }
  return pmus;
}

std::vector<DerivedMetric> derived_metrics(const std::vector<CounterReading>& readings) {
  std::map<std::string, double> counted;
  for (const CounterReading& reading : readings) {
    if (reading.supported) counted[reading.name] = reading.value;
  }
  struct Ratio {
    const char* name;
    const char* numerator;
    const char* denominator;
  };
  constexpr Ratio kRatios[] = {
      {"ipc", "instructions", "cycles"},
      {"cache-miss-rate", "cache-misses", "cache-references"},
      {"LLC-load-miss-rate", "LLC-load-misses", "LLC-loads"},
      {"L1-dcache-load-miss-rate", "L1-dcache-load-misses", "L1-dcache-loads"},
      {"branch-miss-rate", "branch-misses", "branches"},
  };
  std::vector<DerivedMetric> metrics;
  for (const Ratio& ratio : kRatios) {
    const auto top = counted.find(ratio.numerator);
    const auto bottom = counted.find(ratio.denominator);
    if (top == counted.end() || bottom == counted.end() || bottom->second <= 0) continue;
    metrics.push_back({ratio.name, top->second / bottom->second,
                       std::string(ratio.numerator) + " / " + ratio.denominator});
  }
  return metrics;
}

}  // namespace cuvil::probes
