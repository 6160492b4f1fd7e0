#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "base/error.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime {
namespace {

// Counts how often each index of [0, n) is visited by one parallel_for.
std::vector<int> visits(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> count(static_cast<size_t>(n));
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) count[static_cast<size_t>(i)]++;
  });
  std::vector<int> out;
  for (auto& c : count) out.push_back(c.load());
  return out;
}

// Under an address-space limit the pool cannot start all its threads: a UserError saying how
// many started, after joining them (before, the unwinding terminated the process).
TEST(ThreadPool, ThreadsThatCannotStartAreAUserError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "an address-space limit leaves AddressSanitizer no room for its shadow memory "
                  "(scripts/sanitize.sh)";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit limit{static_cast<rlim_t>(512) << 20, static_cast<rlim_t>(512) << 20};
    setrlimit(RLIMIT_AS, &limit);
    try {
      runtime::ThreadPool pool(500);
    } catch (const UserError& e) {
      _exit(std::string(e.what()).find("cannot start 500 threads") != std::string::npos ? 0 : 2);
    } catch (...) {
      _exit(3);
    }
    _exit(4);  // all 500 started: the limit did not bite
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died by a signal";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ThreadPool, CoversEveryIndexOnceWhenFewerItemsThanThreads) {
  ThreadPool pool(4);
  EXPECT_EQ(visits(pool, 3), std::vector<int>(3, 1));
}

TEST(ThreadPool, ZeroItemsCallsNothing) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(0, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, WithoutSpinningWorkersSleepAndWakeForEveryLoop) {
  ThreadPool pool(2, /*spin_us=*/0);
  for (int rep = 0; rep < 100; ++rep) {
    const int64_t n = 1 + rep * 13 % 97;
    ASSERT_EQ(visits(pool, n), std::vector<int>(static_cast<size_t>(n), 1)) << "n=" << n;
  }
}

int cpus_in_affinity_mask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  return CPU_COUNT(&set);
}

// More threads than CPUs: a spinning worker would hold a core another needs, so none spins.
TEST(ThreadPool, ThreadsBeyondTheCpusDoNotSpin) {
  const int cpus = cpus_in_affinity_mask();
  ThreadPool fits(cpus, /*spin_us=*/2000);
  EXPECT_EQ(fits.spin_us(), 2000);
  ThreadPool oversubscribed(cpus + 1, /*spin_us=*/2000);
  EXPECT_EQ(oversubscribed.spin_us(), 0);
  EXPECT_EQ(visits(oversubscribed, 37), std::vector<int>(37, 1));
}

TEST(ThreadPool, OpenmpRuntimeCoversEveryIndexOnceWithDistinctThreadIds) {
  ThreadPool pool(3, ThreadPool::kDefaultSpinUs, ThreadRuntime::openmp);
  for (int64_t n : {1, 2, 3, 7, 1000}) {
    ASSERT_EQ(visits(pool, n), std::vector<int>(static_cast<size_t>(n), 1)) << "n=" << n;
  }
  std::vector<std::atomic<int>> by_tid(3);
  pool.parallel_for_tid(3, [&](int tid, int64_t, int64_t) {
    by_tid[static_cast<size_t>(tid)]++;
    EXPECT_EQ(pool.current_thread(), tid);
  });
  for (auto& c : by_tid) EXPECT_EQ(c.load(), 1);
}

TEST(ThreadPool, OpenmpRuntimeRunsNestedLoopsInline) {
  ThreadPool pool(2, ThreadPool::kDefaultSpinUs, ThreadRuntime::openmp);
  std::atomic<int> inner{0};
  pool.parallel_for_tid(2, [&](int tid, int64_t, int64_t) {
    pool.parallel_for_tid(5, [&](int inner_tid, int64_t b, int64_t e) {
      EXPECT_EQ(inner_tid, tid);  // same thread, same scratch
      inner += static_cast<int>(e - b);
    });
  });
  EXPECT_EQ(inner.load(), 10);
}

// Sleeping workers (no spin) often have their part run by the caller; part p must still get
// thread id p and the same range, since kernels index per-thread scratch by it.
TEST(ThreadPool, PartsKeepTheirThreadIdWhoeverRunsThem) {
  ThreadPool pool(4, /*spin_us=*/0);
  for (int rep = 0; rep < 300; ++rep) {
    const int64_t n = 4 + rep % 13;
    std::vector<std::atomic<int64_t>> begin_of(4);
    for (auto& b : begin_of) b = -1;
    pool.parallel_for_tid(n, [&](int tid, int64_t b, int64_t) {
      begin_of[static_cast<size_t>(tid)] = b;
      EXPECT_EQ(pool.current_thread(), tid);
    });
    for (int p = 0; p < 4; ++p) {
      ASSERT_EQ(begin_of[static_cast<size_t>(p)].load(), n * p / 4) << "rep " << rep;
    }
  }
}

TEST(ThreadPool, ManyLoopsReuseTheWorkers) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 200; ++rep) {
    const int64_t n = 1 + rep * 37 % 1001;
    ASSERT_EQ(visits(pool, n), std::vector<int>(static_cast<size_t>(n), 1)) << "n=" << n;
  }
}

TEST(ThreadPool, SingleThreadRunsInlineAsOnePart) {
  ThreadPool pool(1);
  int parts = 0;
  pool.parallel_for(17, [&](int64_t b, int64_t e) {
    ++parts;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 17);
  });
  EXPECT_EQ(parts, 1);
}

TEST(ThreadPool, NestedLoopRunsInlineOnTheCallingThread) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> count(64);
  pool.parallel_for_tid(2, [&](int tid, int64_t b, int64_t e) {
    for (int64_t outer = b; outer < e; ++outer) {
      pool.parallel_for_tid(32, [&](int inner_tid, int64_t ib, int64_t ie) {
        EXPECT_EQ(inner_tid, tid);
        for (int64_t i = ib; i < ie; ++i) count[static_cast<size_t>(outer * 32 + i)]++;
      });
    }
  });
  for (auto& c : count) EXPECT_EQ(c.load(), 1);
}

TEST(ThreadPool, ThreadIdsAreDistinctPerPart) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> seen(2);
  pool.parallel_for_tid(2, [&](int tid, int64_t, int64_t) { seen[static_cast<size_t>(tid)]++; });
  EXPECT_EQ(seen[0].load(), 1);
  EXPECT_EQ(seen[1].load(), 1);
}

// Units [0, n) a balanced loop gave thread 0, where each unit of thread 1 sleeps `slow_us`
// (thread 0's 100 us): a core shared with other work, as the pool sees it.
int64_t units_of_thread_0(ThreadPool& pool, int64_t n, int slow_us,
                          std::vector<int>* visits = nullptr) {
  std::vector<std::atomic<int>> count(static_cast<size_t>(n));
  std::atomic<int64_t> first{0};
  pool.parallel_for_balanced(n, [&](int tid, int64_t b, int64_t e) {
    if (tid == 0) first = e - b;
    for (int64_t i = b; i < e; ++i) {
      count[static_cast<size_t>(i)]++;
      std::this_thread::sleep_for(std::chrono::microseconds(tid == 0 ? 100 : slow_us));
    }
  });
  if (visits) {
    visits->clear();
    for (auto& c : count) visits->push_back(c.load());
  }
  return first.load();
}

TEST(ThreadPool, MeasuredBalanceGivesTheSlowerThreadFewerUnits) {
  ThreadPool pool(2, ThreadPool::kDefaultSpinUs, ThreadRuntime::pool, LoopBalance::measured);
  std::vector<int> seen;
  for (int run = 0; run < 30; ++run) {
    pool.begin_step(0);
    units_of_thread_0(pool, 20, 400, &seen);
    ASSERT_EQ(seen, std::vector<int>(20, 1)) << "run " << run;
  }
  pool.begin_step(0);
  EXPECT_GT(units_of_thread_0(pool, 20, 400), 10);
  // Another step's loop of the same size has cuts of its own, equal to begin with.
  pool.begin_step(1);
  EXPECT_EQ(units_of_thread_0(pool, 20, 400), 10);
}

TEST(ThreadPool, EqualBalanceAndUnnamedStepsKeepStaticParts) {
  ThreadPool equal(2, ThreadPool::kDefaultSpinUs, ThreadRuntime::pool, LoopBalance::equal);
  ThreadPool unnamed(2, ThreadPool::kDefaultSpinUs, ThreadRuntime::pool, LoopBalance::measured);
  for (int run = 0; run < 10; ++run) {
    equal.begin_step(0);
    EXPECT_EQ(units_of_thread_0(equal, 20, 400), 10);
    EXPECT_EQ(units_of_thread_0(unnamed, 20, 400), 10);  // no begin_step: no loop to learn for
  }
}

TEST(ThreadPool, ScratchIsAlignedAndKeptBetweenCalls) {
  ThreadPool pool(2);
  float* a = pool.scratch(1, ThreadPool::kKernel, 1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(pool.scratch(1, ThreadPool::kKernel, 500), a);
  EXPECT_NE(pool.scratch(1, ThreadPool::kPackA, 10), a);
}

}  // namespace
}  // namespace cuvil::runtime
