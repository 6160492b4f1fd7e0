// python-binding: how a run started from Python (the `cuvil` module) gives the GIL back to
// Python while it executes. A call releases the GIL for the whole plan; every `gil_check` steps
// the executor takes it back briefly to check for signals (Ctrl-C raises KeyboardInterrupt
// between steps, and the model stays usable) and to call the model's step hook if one is set.
// More often: a quicker Ctrl-C and finer hooks, but each check waits for the GIL, which other
// Python threads may hold for up to the interpreter's switch interval (5 ms). Sets graph
// annotation "python-binding.gil_check" (read by lowering into Plan::gil_check_steps); runs
// outside Python ignore it.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

inline constexpr const char* kPythonBindingPass = "python-binding";
inline constexpr const char* kGilCheckAnnotation = "python-binding.gil_check";

class PythonBindingPass final : public Pass {
 public:
  std::string_view name() const override { return kPythonBindingPass; }
  std::string_view summary() const override {
    return "how often a run called from Python takes the GIL back (signals, step hooks)";
  }
  std::vector<ParamSpec> params() const override;
  bool applies_to(std::string_view target) const override { return target == "cpu"; }
  // Only a Python scenario can measure it: cuvil-bench's runs never take the GIL.
  bool tuned_by_default() const override { return false; }
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
