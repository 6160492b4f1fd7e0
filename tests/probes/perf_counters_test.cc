#include "probes/perf_counters.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/error.h"

namespace cuvil::probes {
namespace {

// Software events must be countable wherever the suite runs; skip only where the kernel forbids
// perf_event_open altogether (paranoid 3 or a seccomp filter), saying so.
bool software_counting_available(std::string* why) {
  for (const EventDescription& event : list_events()) {
    if (event.name == "task-clock") {
      if (!event.supported) *why = event.reason;
      return event.supported;
    }
  }
  *why = "task-clock not listed";
  return false;
}

#define REQUIRE_SOFTWARE_COUNTERS()                              \
  do {                                                           \
    std::string why;                                             \
    if (!software_counting_available(&why)) GTEST_SKIP() << why; \
  } while (0)

const CounterReading& find(const std::vector<CounterReading>& readings, const std::string& name) {
  for (const CounterReading& reading : readings) {
    if (reading.name == name) return reading;
  }
  ADD_FAILURE() << "no reading named " << name;
  static CounterReading none;
  return none;
}

volatile double g_sink = 0;

void spin_for_cpu_time(int iterations) {
  double x = 1.0;
  for (int i = 0; i < iterations; ++i) x = x * 1.0000001 + 1e-9;
  g_sink = x;
}

TEST(PerfCountersTest, GenericNamesEncodeThroughLibpfm) {
  // Encoding happens before any support check: these names are known everywhere libpfm4 runs.
  for (const char* name : {"cycles", "instructions", "cache-misses", "LLC-load-misses",
                           "task-clock", "context-switches", "cpu-migrations", "page-faults"}) {
    EXPECT_NO_THROW(PerfCounters::open({name})) << name;
  }
}

TEST(PerfCountersTest, PmuEventStringsWithDotOrColonEncodeWhenTheCpuIsKnown) {
  bool intel_core = false;
  for (const PmuDescription& pmu : detected_pmus()) {
    if (pmu.hardware && (pmu.name == "icl" || pmu.name == "skx" || pmu.name == "spr" ||
                         pmu.name == "clx" || pmu.name == "icx")) {
      intel_core = true;
    }
  }
  if (!intel_core) GTEST_SKIP() << "libpfm4 detects no Intel server/Ice Lake core PMU here";
  const PerfCounters counters =
      PerfCounters::open({"MEM_LOAD_RETIRED.L3_MISS", "MEM_LOAD_RETIRED:L3_MISS"});
  const std::vector<CounterReading> readings = counters.read();
  ASSERT_EQ(readings.size(), 2u);
  EXPECT_EQ(readings[0].name, "MEM_LOAD_RETIRED.L3_MISS");  // as the user wrote it
  EXPECT_EQ(readings[0].supported, readings[1].supported);
}

TEST(PerfCountersTest, GarbageEventNameIsAUserErrorNamingIt) {
  try {
    PerfCounters::open({"task-clock", "no-such-event-xyz"});
    FAIL() << "expected UserError";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("no-such-event-xyz"), std::string::npos)
        << error.what();
  }
}

TEST(PerfCountersTest, EmptyEventNameIsAUserError) {
  EXPECT_THROW(PerfCounters::open({""}), UserError);
}

TEST(PerfCountersTest, ReadingsComeInTheOrderNamed) {
  REQUIRE_SOFTWARE_COUNTERS();
  const PerfCounters counters =
      PerfCounters::open({"page-faults", "task-clock", "context-switches", "cycles"});
  const std::vector<CounterReading> readings = counters.read();
  ASSERT_EQ(readings.size(), 4u);
  EXPECT_EQ(readings[0].name, "page-faults");
  EXPECT_EQ(readings[1].name, "task-clock");
  EXPECT_EQ(readings[2].name, "context-switches");
  EXPECT_EQ(readings[3].name, "cycles");
}

TEST(PerfCountersTest, TaskClockCountsOnlyWhileStarted) {
  REQUIRE_SOFTWARE_COUNTERS();
  PerfCounters counters = PerfCounters::open({"task-clock"});
  spin_for_cpu_time(2'000'000);
  EXPECT_EQ(find(counters.read(), "task-clock").raw, 0u);  // opened disabled
  counters.start();
  spin_for_cpu_time(20'000'000);
  counters.stop();
  const CounterReading after = find(counters.read(), "task-clock");
  EXPECT_TRUE(after.supported) << after.reason;
  EXPECT_GT(after.raw, 0u);
  spin_for_cpu_time(2'000'000);
  EXPECT_EQ(find(counters.read(), "task-clock").raw, after.raw);  // stopped
}

TEST(PerfCountersTest, SoftwareGroupIsAlwaysScheduledSoScaleIsOne) {
  REQUIRE_SOFTWARE_COUNTERS();
  PerfCounters counters = PerfCounters::open({"task-clock", "page-faults", "context-switches"});
  counters.start();
  spin_for_cpu_time(5'000'000);
  counters.stop();
  for (const CounterReading& reading : counters.read()) {
    ASSERT_TRUE(reading.supported) << reading.name << ": " << reading.reason;
    EXPECT_GT(reading.time_enabled_ns, 0u) << reading.name;
    EXPECT_EQ(reading.time_enabled_ns, reading.time_running_ns) << reading.name;
    EXPECT_DOUBLE_EQ(reading.scale, 1.0) << reading.name;
    EXPECT_DOUBLE_EQ(reading.value, static_cast<double>(reading.raw)) << reading.name;
  }
}

TEST(PerfCountersTest, TouchingFreshPagesCountsAtLeastThatManyPageFaults) {
  REQUIRE_SOFTWARE_COUNTERS();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  constexpr size_t kPages = 777;
  PerfCounters counters = PerfCounters::open({"page-faults", "minor-faults"});
  void* memory = mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  madvise(memory, kPages * page, MADV_NOHUGEPAGE);  // one fault per 4 KiB page, not per 2 MiB
  counters.start();
  auto* bytes = static_cast<volatile char*>(memory);
  for (size_t i = 0; i < kPages; ++i) bytes[i * page] = 1;
  counters.stop();
  munmap(memory, kPages * page);
  const std::vector<CounterReading> readings = counters.read();
  EXPECT_GE(find(readings, "page-faults").value, static_cast<double>(kPages));
  EXPECT_GE(find(readings, "minor-faults").value, static_cast<double>(kPages));
}

TEST(PerfCountersTest, CountsEveryThreadAttachedAndSumsThem) {
  REQUIRE_SOFTWARE_COUNTERS();
  std::atomic<bool> go{false}, done{false};
  std::atomic<int> finished{0};
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  constexpr size_t kPagesPerThread = 301;
  auto worker = [&] {
    while (!go) std::this_thread::yield();
    void* memory = mmap(nullptr, kPagesPerThread * page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(memory, kPagesPerThread * page, MADV_NOHUGEPAGE);
    auto* bytes = static_cast<volatile char*>(memory);
    for (size_t i = 0; i < kPagesPerThread; ++i) bytes[i * page] = 1;
    munmap(memory, kPagesPerThread * page);
    ++finished;
    while (!done) std::this_thread::yield();
  };
  std::thread a(worker), b(worker), c(worker);
  PerfCounters counters = PerfCounters::open({"page-faults"});
  EXPECT_GE(counters.thread_count(), 4u);  // this thread and the three workers
  counters.start();
  go = true;
  while (finished < 3) std::this_thread::yield();
  counters.stop();
  done = true;
  a.join();
  b.join();
  c.join();
  EXPECT_GE(find(counters.read(), "page-faults").value, 3.0 * kPagesPerThread);
}

TEST(PerfCountersTest, ThreadsStartedLaterAreCountedAfterAttachThreads) {
  REQUIRE_SOFTWARE_COUNTERS();
  PerfCounters counters = PerfCounters::open({"task-clock"});
  const size_t before = counters.thread_count();
  std::atomic<bool> done{false};
  std::thread late([&] {
    while (!done) std::this_thread::yield();
  });
  counters.attach_threads();
  EXPECT_EQ(counters.thread_count(), before + 1);
  counters.attach_threads();  // attaching twice adds nothing
  EXPECT_EQ(counters.thread_count(), before + 1);
  done = true;
  late.join();
}

TEST(PerfCountersTest, ThreadsThatCannotBeAttachedAreNamedInTheReading) {
  REQUIRE_SOFTWARE_COUNTERS();
  PerfCounters counters = PerfCounters::open({"task-clock"});
  // Leave no file descriptors for the threads started next (EMFILE), then restore the limit.
  int highest = 0, open_count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    highest = std::max(highest, std::stoi(entry.path().filename().string()));
    ++open_count;
  }
  const int free_below = highest + 1 - open_count;
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < free_below + 2; ++i) {
    threads.emplace_back([&done] {
      while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  }
  rlimit old_limit;
  getrlimit(RLIMIT_NOFILE, &old_limit);
  rlimit tight = old_limit;
  tight.rlim_cur = static_cast<rlim_t>(highest + 1);
  setrlimit(RLIMIT_NOFILE, &tight);
  counters.attach_threads();
  setrlimit(RLIMIT_NOFILE, &old_limit);
  done = true;
  for (std::thread& thread : threads) thread.join();
  const CounterReading reading = find(counters.read(), "task-clock");
  EXPECT_TRUE(reading.supported);
  EXPECT_NE(reading.reason.find("could not be attached"), std::string::npos) << reading.reason;
  EXPECT_NE(reading.reason.find("EMFILE"), std::string::npos) << reading.reason;
}

TEST(PerfCountersTest, ExitedThreadsKeepTheirCounts) {
  REQUIRE_SOFTWARE_COUNTERS();
  std::atomic<bool> go{false};
  std::thread worker([&] {
    while (!go) std::this_thread::yield();
    spin_for_cpu_time(20'000'000);
  });
  PerfCounters counters = PerfCounters::open({"task-clock"});
  counters.start();
  go = true;
  worker.join();
  const CounterReading after_exit = find(counters.read(), "task-clock");
  counters.stop();
  // The worker's ~tens of ms of CPU time are still in the sum after it exited.
  EXPECT_GT(after_exit.raw, 1'000'000u);
}

TEST(PerfCountersTest, SampleAgreesWithReadOnStoppedCounters) {
  REQUIRE_SOFTWARE_COUNTERS();
  PerfCounters counters = PerfCounters::open({"cycles", "task-clock", "page-faults"});
  counters.start();
  spin_for_cpu_time(3'000'000);
  counters.stop();
  const std::vector<CounterReading> readings = counters.read();
  std::vector<CounterSample> samples;
  counters.sample(samples);
  ASSERT_EQ(samples.size(), readings.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].raw, readings[i].raw) << readings[i].name;
    EXPECT_EQ(samples[i].time_enabled_ns, readings[i].time_enabled_ns) << readings[i].name;
    EXPECT_DOUBLE_EQ(samples[i].value, readings[i].value) << readings[i].name;
  }
}

TEST(PerfCountersTest, UnsupportedHardwareEventIsNotSupportedWithAReasonNeverZero) {
  PerfCounters counters = PerfCounters::open({"cycles", "task-clock"});
  const CounterReading cycles = find(counters.read(), "cycles");
  if (cycles.supported) GTEST_SKIP() << "this machine counts cycles";
  EXPECT_FALSE(cycles.reason.empty());
  EXPECT_NE(cycles.reason.find("cycles"), std::string::npos) << cycles.reason;
  EXPECT_EQ(cycles.raw, 0u);
  EXPECT_EQ(cycles.value, 0.0);
  // The unsupported event does not take the supported one down with it.
  std::string why;
  if (software_counting_available(&why)) {
    counters.start();
    spin_for_cpu_time(5'000'000);
    counters.stop();
    EXPECT_GT(find(counters.read(), "task-clock").raw, 0u);
  }
}

TEST(PerfCountersTest, ListedEventsEachSaySupportedOrWhyNot) {
  const std::vector<EventDescription> events = list_events();
  ASSERT_FALSE(events.empty());
  for (const EventDescription& event : events) {
    EXPECT_FALSE(event.kind.empty()) << event.name;
    if (!event.supported) {
      EXPECT_FALSE(event.reason.empty()) << event.name;
    }
  }
}

TEST(PerfCountersTest, LibpfmDetectsItsGenericPerfPmu) {
  bool perf = false;
  for (const PmuDescription& pmu : detected_pmus()) perf = perf || pmu.name == "perf";
  EXPECT_TRUE(perf);
}

TEST(PerfCountersTest, OpenErrorsExplainTheFix) {
  EXPECT_NE(explain_open_error(EACCES, "cycles", true, 3).find("perf_event_paranoid"),
            std::string::npos);
  EXPECT_NE(explain_open_error(EMFILE, "cycles", true, 2).find("ulimit"), std::string::npos);
  EXPECT_NE(explain_open_error(ENOENT, "cycles", true, 2).find("not supported"), std::string::npos);
  EXPECT_NE(paranoid_explanation(3).find("CAP_PERFMON"), std::string::npos);
}

// ---- group reads and multiplexing arithmetic ------------------------------------------------

TEST(GroupReadTest, ParsesNrTimesAndValues) {
  const uint64_t words[] = {3, 1000, 250, 7, 11, 13};
  const GroupRead read = parse_group_read(words, 6);
  EXPECT_EQ(read.time_enabled_ns, 1000u);
  EXPECT_EQ(read.time_running_ns, 250u);
  EXPECT_EQ(read.values, (std::vector<uint64_t>{7, 11, 13}));
}

TEST(GroupReadTest, TruncatedReadKeepsOnlyWholeValues) {
  const uint64_t words[] = {5, 1000, 1000, 1, 2};
  EXPECT_EQ(parse_group_read(words, 5).values, (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(parse_group_read(words, 2).values.empty());
}

TEST(GroupReadTest, MultiplexedThreadsAreScaledEachByItsOwnRatio) {
  // Thread 1 counted a quarter of the time, thread 2 all of it.
  const std::vector<GroupRead> threads = {{1000, 250, {100, 5}}, {3000, 3000, {30, 1}}};
  const CounterReading first = combine_thread_counts("instructions", threads, 0);
  EXPECT_TRUE(first.supported);
  EXPECT_EQ(first.raw, 130u);
  EXPECT_EQ(first.time_enabled_ns, 4000u);
  EXPECT_EQ(first.time_running_ns, 3250u);
  EXPECT_DOUBLE_EQ(first.value, 100.0 * 4 + 30.0);
  EXPECT_DOUBLE_EQ(first.scale, 4000.0 / 3250.0);
  EXPECT_DOUBLE_EQ(combine_thread_counts("x", threads, 1).value, 5.0 * 4 + 1.0);
}

TEST(GroupReadTest, NeverScheduledIsUnsupportedNotZero) {
  const std::vector<GroupRead> threads = {{1000, 0, {0}}, {7, 0, {0}}};
  const CounterReading reading = combine_thread_counts("cycles", threads, 0);
  EXPECT_FALSE(reading.supported);
  EXPECT_FALSE(reading.reason.empty());
}

TEST(GroupReadTest, NothingEnabledYetIsAZeroCount) {
  const CounterReading reading = combine_thread_counts("task-clock", {{0, 0, {0}}}, 0);
  EXPECT_TRUE(reading.supported);
  EXPECT_EQ(reading.value, 0.0);
  EXPECT_DOUBLE_EQ(reading.scale, 1.0);
}

// ---- derived metrics ------------------------------------------------------------------------

CounterReading counted(const std::string& name, double value) {
  CounterReading reading;
  reading.name = name;
  reading.supported = true;
  reading.value = value;
  return reading;
}

TEST(DerivedMetricsTest, IpcAndMissRatesFromTheirInputs) {
  const std::vector<DerivedMetric> metrics =
      derived_metrics({counted("cycles", 200), counted("instructions", 300),
                       counted("cache-references", 50), counted("cache-misses", 5)});
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[0].name, "ipc");
  EXPECT_DOUBLE_EQ(metrics[0].value, 1.5);
  EXPECT_EQ(metrics[1].name, "cache-miss-rate");
  EXPECT_DOUBLE_EQ(metrics[1].value, 0.1);
}

TEST(DerivedMetricsTest, NoMetricWhenAnInputIsUnsupportedOrMissing) {
  CounterReading cycles;
  cycles.name = "cycles";
  cycles.reason = "not supported";
  EXPECT_TRUE(derived_metrics({cycles, counted("instructions", 300)}).empty());
  EXPECT_TRUE(derived_metrics({counted("instructions", 300)}).empty());
  EXPECT_TRUE(derived_metrics({counted("instructions", 3), counted("cycles", 0)}).empty());
}

}  // namespace
}  // namespace cuvil::probes
