// The micro-benchmarks' threads, one rule for all of them: CUVIL_THREADS, else every hardware
// thread (as cuvil-bench's default); one pool per process, made on first use.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "runtime/thread_pool.h"

namespace cuvil::bench::micro {

inline int bench_threads() {
  if (const char* env = std::getenv("CUVIL_THREADS")) return std::max(1, std::atoi(env));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

inline runtime::ThreadPool& bench_pool() {
  static runtime::ThreadPool pool(bench_threads());
  return pool;
}

}  // namespace cuvil::bench::micro
