// Waiting for the CPUs to go quiet before a workload's turn (measure_interleaved). Runtimes
// leave threads spinning after a call: OpenMP's workers spin ~300000 pauses (10-20 ms), and
// OpenBLAS's pthread workers, which PyTorch's linears call, spin about 2^28 cycles (~100 ms at
// 2.7 GHz) before they sleep. A turn that begins while they spin runs on fewer CPUs, and a fixed
// idle time long enough for the slowest runtime would idle most turns for nothing. So the wait
// watches the threads of the processes that run the workloads (this one and its helpers, e.g.
// the PyTorch worker) and ends once none of them is running or waiting to run: a spinning thread
// is, even while the scheduler has it off the CPU, so a loaded machine does not fool the watch
// as a CPU-time window would.
#pragma once

#include <sys/types.h>

#include <vector>

namespace cuvil::bench {

// How often the threads are looked at while waiting.
constexpr double kSettlePollS = 0.001;

struct SettleOptions {
  double min_s = 0.02;         // idle at least this long
  double max_s = 1.0;          // and at most this long (0: min_s only, nothing watched)
  std::vector<pid_t> helpers;  // besides this process
};

struct Settled {
  double waited_s = 0;  // idle time spent
  bool quiet = true;    // false: max_s passed with a thread still running
};

// Threads of this process (the calling thread aside) and of the helpers that are running or
// runnable (state R in /proc/PID/task/TID/stat). A helper that is gone has none.
int busy_threads(const std::vector<pid_t>& helpers);

// Sleeps min_s, then looks every kSettlePollS until no thread is busy or max_s has passed.
Settled settle(const SettleOptions& options);

}  // namespace cuvil::bench
