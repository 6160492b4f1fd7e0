// An observer of a Plan's execution: sees every step of Executor::run, in order, on the thread
// that calls run(). Probes (per-op timing and counters) hook in here; the runtime only calls it.
#pragma once

#include <cstddef>

namespace cuvil::runtime {

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void on_run_begin() {}
  virtual void on_step_begin(size_t step_index) = 0;
  virtual void on_step_end(size_t step_index) = 0;
  virtual void on_run_end() {}
};

}  // namespace cuvil::runtime
