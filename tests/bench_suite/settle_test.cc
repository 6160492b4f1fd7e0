// Settling before a turn: waits out threads that spin after a workload's call, in this process
// and in helper processes, and gives up after max_s.
#include "bench_suite/settle.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "bench_suite/measure.h"
#include "probes/clock.h"

namespace cuvil::bench {
namespace {

constexpr int64_t kSpinCpuNs = 150'000'000;

// Spins until this thread has used `cpu_ns` of CPU time (not wall time: on a loaded machine it
// is busy for as long as it runs).
void spin_for_cpu(int64_t cpu_ns) {
  timespec ts{};
  auto thread_cpu_ns = [&ts] {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  };
  const int64_t start = thread_cpu_ns();
  while (thread_cpu_ns() - start < cpu_ns) {
  }
}

// Threads that spin until destroyed. Two, so that on a loaded machine (ctest -j) the scheduler
// does not leave them both off the CPUs for a whole quiet window.
class Spinners {
 public:
  Spinners() {
    for (std::thread& t : threads_) {
      t = std::thread([this] {
        while (!stop_) {
        }
      });
    }
  }
  ~Spinners() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread threads_[2];
};

TEST(Settle, ReturnsAtOnceWhenNothingSpins) {
  const Settled s = settle({0.0, 10.0, {}});
  EXPECT_TRUE(s.quiet);
  EXPECT_LT(s.waited_s, 5.0);
}

TEST(Settle, WaitsForAThreadOfThisProcessThatStillSpins) {
  std::atomic<bool> started{false}, done{false};
  std::thread spinner([&] {
    started = true;
    spin_for_cpu(kSpinCpuNs);
    done = true;
  });
  while (!started) {
  }
  EXPECT_GT(busy_threads({}), 0);
  const Settled s = settle({0.0, 10.0, {}});
  EXPECT_TRUE(s.quiet);
  EXPECT_TRUE(done);  // quiet only once the spinner had finished
  spinner.join();
}

int64_t process_cpu_ns(pid_t pid) {
  clockid_t clock;
  timespec ts{};
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) != 0) return -1;
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

TEST(Settle, WaitsForAHelperProcessThatStillSpins) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    spin_for_cpu(kSpinCpuNs);
    pause();  // idle until killed
    _exit(0);
  }
  const Settled s = settle({0.0, 10.0, {child}});
  const int64_t helper_cpu_ns = process_cpu_ns(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(s.quiet);
  EXPECT_GE(helper_cpu_ns, kSpinCpuNs);  // quiet only once the helper had finished its spin
}

TEST(Settle, AHelperThatIsGoneHasNoBusyThreads) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(busy_threads({child}), 0);
}

TEST(Settle, GivesUpAfterMaxSWhileSomethingSpins) {
  Settled s;
  {
    Spinners busy;
    s = settle({0.0, 0.05, {}});
  }
  EXPECT_FALSE(s.quiet);
  EXPECT_GE(s.waited_s, 0.05);
}

TEST(Settle, MaxSZeroSleepsMinSAndWatchesNothing) {
  Settled s;
  {
    Spinners busy;
    s = settle({0.01, 0.0, {}});
  }
  EXPECT_TRUE(s.quiet);
  EXPECT_GE(s.waited_s, 0.0099);
}

// measure_interleaved counts each workload's turns, and those that began busy.
TEST(Settle, InterleavedTurnsCountTheUnsettledOnes) {
  MeasureOptions o;
  o.warmup_iterations = 1;
  o.warmup_time_s = 0;
  o.min_samples = 5;
  o.min_time_s = 0;
  o.timeout_s = 1;
  const Sampler fixed = [] { return Sample{1e6, 1e6}; };
  const InterleaveOptions turns{{0.0, 0.01, {}}, 0.0};
  std::vector<Measurement> m;
  {
    Spinners busy;
    m = measure_interleaved({fixed, fixed}, o, {}, turns);
  }
  for (const Measurement& x : m) {
    EXPECT_GT(x.turns, 0);
    EXPECT_GT(x.unsettled_turns, 0);
    EXPECT_LE(x.unsettled_turns, x.turns);
    EXPECT_GE(x.settle_s, 0.01 * static_cast<double>(x.unsettled_turns));
  }
}

}  // namespace
}  // namespace cuvil::bench
