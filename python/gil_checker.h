// The step observer a call from Python runs under (passes/python_binding.h): while the plan
// executes without the GIL, every `steps` steps it takes the GIL back, lets Python handle
// pending signals (Ctrl-C raises KeyboardInterrupt between steps) and calls the model's step
// hook if one is set. A Python exception ends the run there; the execution context stays
// usable for the next call.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "runtime/step_observer.h"

namespace cuvil::python {

class GilChecker final : public runtime::StepObserver {
 public:
  // `hook` is None or a callable(step_index, node_name); `names` are the plan's step names.
  GilChecker(int steps, pybind11::object hook, const std::vector<std::string>* names);
  void on_step_begin(size_t) override {}
  void on_step_end(size_t step_index) override;
  int64_t checks() const { return checks_; }

 private:
  int steps_;
  pybind11::object hook_;
  const std::vector<std::string>* names_;
  int64_t checks_ = 0;
};

}  // namespace cuvil::python
