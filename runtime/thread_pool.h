// A fixed pool of worker threads for data-parallel loops inside kernels. The caller is one of the
// threads, so `threads` = 1 runs everything inline. Part p of a loop always runs with thread id p
// (scratch), but by whichever thread takes it first: a worker that has not started its part when
// the caller finishes its own (descheduled by other load) has it run by the caller. Between loops a
// worker spins for `spin_us` microseconds, then sleeps on a condition variable; the caller spins as
// long for the last part before sleeping. Waking a sleeping thread costs tens of microseconds on a
// VM, several times per kernel, so the spin covers the gaps between a plan's steps. Threads are
// reused across steps: no thread churn per step. A pool with more threads than the process may run
// on does not spin at all: a spinning thread would hold a core that another of its threads (or an
// OpenMP team) needs to finish the loop (51 threads spinning 10 ms on 2 CPUs made a scaled-down
// SDXL step 13x slower than without spinning). libgomp lowers its spin count likewise.
// A balanced loop's parts may be cut unequally: by each thread's measured speed on that loop of
// that step the runs before (LoopBalance::measured, runtime/loop_balance.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/loop_balance.h"

namespace cuvil::runtime {

// Which threads run a pool's parallel loops: its own workers, or an OpenMP team. A plan with
// oneDNN steps uses OpenMP for every step: oneDNN (Debian's build) runs on OpenMP, and two sets
// of threads taking turns on the same cores spin against each other (ResNet-50 b1 with oneDNN 1x1
// convolutions and generated 3x3 ones took 45 ms, against 24 ms all oneDNN and 29 ms all
// generated).
enum class ThreadRuntime : uint8_t { pool, openmp };

// How a balanced loop (parallel_for_balanced) cuts its units between threads: in equal parts,
// or by each thread's measured speed on that loop the runs before (runtime/loop_balance.h).
enum class LoopBalance : uint8_t { equal, measured };

class ThreadPool {
 public:
  static constexpr int kDefaultSpinUs = 50;
  explicit ThreadPool(int threads, int spin_us = kDefaultSpinUs,
                      ThreadRuntime runtime = ThreadRuntime::pool,
                      LoopBalance balance = LoopBalance::equal);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  // The spin in effect: the one asked for, or 0 where the threads outnumber the CPUs.
  int spin_us() const { return spin_us_; }

  // Calls f(tid, begin, end) on min(n, threads) disjoint, contiguous, static parts of [0, n),
  // one part per thread; tid identifies the thread (for scratch). A call from inside a parallel
  // region runs inline on the calling thread.
  template <class F>
  void parallel_for_tid(int64_t n, F&& f) {
    if (n > 0) run_loop(n, f, nullptr);
  }
  // Like parallel_for_tid, for loops whose units cost about the same and whose results do not
  // depend on where the parts are cut. Where the pool balances by measurement and a step is
  // named (begin_step), the cuts follow how long each thread took on this loop (the step's
  // first, second ... balanced loop) the runs before; otherwise they are the static ones.
  template <class F>
  void parallel_for_balanced(int64_t n, F&& f) {
    if (n > 0) run_loop(n, f, balanced_loop(n));
  }
  // The plan step whose loops run next: balanced loops keep their cuts per step.
  void begin_step(size_t step) {
    step_ = step;
    loop_in_step_ = 0;
  }

  // Calls f(begin, end) on static parts of [0, n).
  template <class F>
  void parallel_for(int64_t n, F&& f) {
    parallel_for_tid(n, [&f](int, int64_t b, int64_t e) { f(b, e); });
  }

  // The calling thread's id inside a parallel region of this pool (0 outside).
  int current_thread() const;

  // Per-thread scratch memory, 64-byte aligned, at least `count` floats; kept between calls so
  // that steady-state runs do not allocate. Distinct slots never alias.
  enum Slot { kPackA = 0, kPackB, kTile, kKernel, kKernel2, kSlotCount };
  float* scratch(int tid, Slot slot, size_t count);

 private:
  void stop_workers();  // wakes, stops and joins the workers; frees the scratch
  using Task = void (*)(void* ctx, int tid, int64_t begin, int64_t end);
  // Runs a loop in static parts, or in the parts `cuts` says (then timed, and the cuts told).
  void run(int64_t n, Task task, void* ctx, BalancedCuts* cuts);
  template <class F>
  void run_loop(int64_t n, F& f, BalancedCuts* cuts) {
    auto call = [](void* ctx, int tid, int64_t b, int64_t e) {
      (*static_cast<F*>(ctx))(tid, b, e);
    };
    run(n, call, &f, cuts);
  }
  // The cuts of the current step's next balanced loop of n units; null where it runs in static
  // parts (equal balance, one thread, OpenMP, nested, no step named).
  BalancedCuts* balanced_loop(int64_t n);

  void worker_loop(int tid);

  struct Buffer {
    float* data = nullptr;
    size_t count = 0;
  };

  void run_openmp(int parts, int64_t n, Task task, void* ctx);
  // Takes part `part` of loop `generation` for the calling thread; false when already taken.
  bool claim(int part, uint64_t generation);

  int threads_;
  int spin_us_;
  ThreadRuntime runtime_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  // Current job, published under mutex_ with a new generation number.
  Task task_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 0;
  const BalancedCuts* cuts_ = nullptr;  // the current loop's cuts; null: static parts
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  // claimed_[p]: the last loop generation whose part p a thread has taken (worker or caller).
  std::unique_ptr<std::atomic<uint64_t>[]> claimed_;
  bool stop_ = false;
  std::vector<Buffer> buffers_;  // threads_ x kSlotCount
  LoopBalance balance_;
  static constexpr size_t kNoStep = ~size_t{0};
  size_t step_ = kNoStep;
  size_t loop_in_step_ = 0;
  std::vector<std::vector<BalancedCuts>> step_loops_;  // [step][balanced loop in the step]
  std::unique_ptr<double[]> part_seconds_;  // each part's time on its own thread, timed loops
};

}  // namespace cuvil::runtime
