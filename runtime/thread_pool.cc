#include "runtime/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <omp.h>
#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <new>
#include <string>
#include <system_error>

#include "base/error.h"

namespace cuvil::runtime {

namespace {
// Which pool and thread the current thread is running a part for (nested loops run inline).
thread_local const ThreadPool* tls_pool = nullptr;
thread_local int tls_tid = 0;

// Part p's bounds: the static ones, or the balanced loop's cuts.
void part_range(int64_t n, int parts, const BalancedCuts* cuts, int p, int64_t* b, int64_t* e) {
  if (cuts) {
    *b = cuts->begin(p);
    *e = cuts->end(p);
    return;
  }
  *b = n * p / parts;
  *e = n * (p + 1) / parts;
}

// Spins while pred() holds, for at most spin_us; true when pred() stopped holding.
template <class Pred>
bool spin_while(int spin_us, Pred pred) {
  if (spin_us <= 0) return !pred();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (!pred()) return true;
#if defined(__x86_64__)
      _mm_pause();  // yields the core's pipeline to a sibling hyperthread while waiting
#endif
    }
    if (std::chrono::steady_clock::now() >= deadline) return !pred();
  }
}
// The CPUs this process may run on (its affinity mask; the online CPUs where that is unknown).
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

int effective_spin_us(int threads, int spin_us) {
  if (spin_us <= 0) return 0;
  return threads > usable_cpus() ? 0 : spin_us;
}

// The clock, read only where a balanced loop's parts are timed.
std::chrono::steady_clock::time_point start_if(bool timed) {
  return timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
}
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

ThreadPool::ThreadPool(int threads, int spin_us, ThreadRuntime runtime, LoopBalance balance)
    : threads_(threads < 1 ? 1 : threads),
      spin_us_(effective_spin_us(threads_, spin_us)),
      runtime_(runtime),
      balance_(balance) {
  buffers_.resize(static_cast<size_t>(threads_) * kSlotCount);
  claimed_ = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(threads_));
  part_seconds_ = std::make_unique<double[]>(static_cast<size_t>(threads_));
  if (runtime_ == ThreadRuntime::openmp) return;  // the OpenMP runtime owns the threads
  try {
    for (int t = 1; t < threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
  } catch (const std::system_error& e) {
    // The threads made so far wait for work: stop and join them before giving up, or their
    // std::thread objects would terminate the process as the vector unwinds.
    const size_t started = workers_.size() + 1;
    stop_workers();
    throw UserError("cannot start " + std::to_string(threads_) + " threads (" +
                    std::to_string(started) + " started: " + e.what() +
                    "); lower --threads or raise the process's limits");
  }
}

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
  workers_.clear();
  for (Buffer& b : buffers_) std::free(b.data);
  buffers_.clear();
}

ThreadPool::~ThreadPool() {
  stop_workers();
}

int ThreadPool::current_thread() const {
  return tls_pool == this ? tls_tid : 0;
}

float* ThreadPool::scratch(int tid, Slot slot, size_t count) {
  CUVIL_CHECK(tid >= 0 && tid < threads_, "scratch: bad thread id");
  Buffer& b = buffers_[static_cast<size_t>(tid) * kSlotCount + slot];
  if (b.count < count) {
    std::free(b.data);
    // Grow geometrically so that a sequence of slightly larger requests settles quickly.
    size_t want = count + count / 4 + 16;
    size_t bytes = (want * sizeof(float) + 63) / 64 * 64;
    b.data = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!b.data) throw std::bad_alloc();
    b.count = bytes / sizeof(float);
  }
  return b.data;
}

BalancedCuts* ThreadPool::balanced_loop(int64_t n) {
  if (balance_ != LoopBalance::measured || runtime_ != ThreadRuntime::pool || threads_ == 1 ||
      n < 2 || step_ == kNoStep || tls_pool == this) {
    return nullptr;
  }
  if (step_loops_.size() <= step_) step_loops_.resize(step_ + 1);
  std::vector<BalancedCuts>& loops = step_loops_[step_];
  if (loops.size() <= loop_in_step_) loops.resize(loop_in_step_ + 1);
  BalancedCuts* cuts = &loops[loop_in_step_++];
  cuts->fit(n, static_cast<int>(n < threads_ ? n : threads_));
  return cuts;
}

void ThreadPool::run(int64_t n, Task task, void* ctx, BalancedCuts* cuts) {
  if (tls_pool == this || threads_ == 1 || n == 1) {
    // Nested or single-threaded: the calling thread does all of it.
    const bool outer = tls_pool != this;
    const int tid = outer ? 0 : tls_tid;
    if (outer) tls_pool = this;
    task(ctx, tid, 0, n);
    if (outer) tls_pool = nullptr;
    return;
  }
  const int parts = static_cast<int>(n < threads_ ? n : threads_);
  if (runtime_ == ThreadRuntime::openmp) {
    run_openmp(parts, n, task, ctx);
    return;
  }
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = task;
    ctx_ = ctx;
    n_ = n;
    parts_ = parts;
    cuts_ = cuts;
    pending_.store(parts - 1);
    generation = generation_.fetch_add(1) + 1;
  }
  wake_.notify_all();
  tls_pool = this;
  bool ran_elsewhere = false;  // a part ran on another thread than its own: its time says nothing
  for (int p = 0; p < parts; ++p) {
    // Part 0 is the caller's; a worker's part that it has not claimed yet (asleep, or its core
    // taken by another process) is run here, with that worker's id, instead of waited for.
    if (p > 0 && !claim(p, generation)) continue;
    ran_elsewhere = ran_elsewhere || p > 0;
    tls_tid = p;
    int64_t b, e;
    part_range(n, parts, cuts, p, &b, &e);
    const auto start = start_if(cuts != nullptr);
    task(ctx, p, b, e);
    if (cuts) part_seconds_[static_cast<size_t>(p)] = seconds_since(start);
    if (p > 0) pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
  tls_pool = nullptr;
  tls_tid = 0;
  // Spin first: parts are balanced, so the others usually finish about now.
  if (!spin_while(spin_us_, [this] { return pending_.load(std::memory_order_acquire) != 0; })) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_.load() == 0; });
  }
  if (cuts && !ran_elsewhere) cuts->record(part_seconds_.get());
}

bool ThreadPool::claim(int part, uint64_t generation) {
  uint64_t last = claimed_[static_cast<size_t>(part)].load(std::memory_order_relaxed);
  while (last < generation) {
    if (claimed_[static_cast<size_t>(part)].compare_exchange_weak(last, generation,
                                                                  std::memory_order_acq_rel)) {
      return true;
    }
  }
  return false;
}

void ThreadPool::run_openmp(int parts, int64_t n, Task task, void* ctx) {
#pragma omp parallel num_threads(parts)
  {
    // A team smaller than asked (OMP_THREAD_LIMIT, nesting) still covers all of [0, n).
    const int team = omp_get_num_threads();
    tls_pool = this;
    for (int p = omp_get_thread_num(); p < parts; p += team) {
      tls_tid = p;
      int64_t b, e;
      part_range(n, parts, nullptr, p, &b, &e);
      task(ctx, p, b, e);
    }
    tls_pool = nullptr;
    tls_tid = 0;
  }
}

void ThreadPool::worker_loop(int tid) {
  tls_pool = this;
  tls_tid = tid;
  uint64_t seen = 0;
  for (;;) {
    // Spin for the next job before sleeping: steps follow each other closely.
    spin_while(spin_us_, [&] { return generation_.load(std::memory_order_acquire) == seen; });
    Task task;
    void* ctx;
    int64_t n;
    int parts;
    const BalancedCuts* cuts;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stop_) return;
      task = task_;
      ctx = ctx_;
      n = n_;
      parts = parts_;
      cuts = cuts_;
    }
    if (tid >= parts || !claim(tid, seen)) continue;  // not needed, or the caller ran it
    int64_t b, e;
    part_range(n, parts, cuts, tid, &b, &e);
    const auto start = start_if(cuts != nullptr);
    task(ctx, tid, b, e);
    if (cuts) part_seconds_[static_cast<size_t>(tid)] = seconds_since(start);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

}  // namespace cuvil::runtime
