// Runs a Plan on the CPU: owns the activation arena and the thread pool.
#pragma once

#include <memory>
#include <vector>

#include "passes/ir/tensor.h"
#include "runtime/plan.h"
#include "runtime/step_observer.h"

namespace cuvil::runtime {

class Executor {
 public:
  explicit Executor(Plan plan);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Inputs and outputs in the graph's order. Inputs with the wrong shape throw UserError.
  std::vector<ir::Tensor> run(const std::vector<ir::Tensor>& inputs);
  // The same, reading each input where the caller holds it (no copy in): inputs[i] points at
  // num_elements(input shape i) floats that stay valid and unchanged during the call.
  std::vector<ir::Tensor> run_views(const std::vector<const float*>& inputs);
  // The steps alone: inputs read where the caller holds them (as run_views), outputs left in
  // the plan's buffers (nothing copied out). What a benchmark times: the harness keeps its
  // inputs resident, so neither copying in nor copying out is in the measured region.
  void execute(const std::vector<const float*>& inputs);
  // What run() checks first: one input per graph input, each of its shape (else UserError).
  void check_inputs(const std::vector<ir::Tensor>& inputs) const;
  const Plan& plan() const { return plan_; }
  // Calls `observer` around every step of later run()s (nullptr, the default: off). Not owned; it
  // must outlive its use.
  void set_observer(StepObserver* observer) { observer_ = observer; }
  StepObserver* observer() const { return observer_; }

 private:
  Plan plan_;
  struct State;
  std::unique_ptr<State> state_;
  StepObserver* observer_ = nullptr;
  bool reach_recorded_ = false;  // the first run completes Step::reach
};

}  // namespace cuvil::runtime
