#include "passes/python_binding.h"

namespace cuvil::passes {

std::vector<ParamSpec> PythonBindingPass::params() const {
  return {int_param("gil_check", 0, 4096, 16,
                    "take the GIL back every this many steps of a run called from Python (0: "
                    "never, the signal is seen when the call returns; 1: every step)")};
}

void PythonBindingPass::run(ir::Graph& graph, const ParamMap& params) const {
  graph.annotations[kGilCheckAnnotation] = param_int(params, "gil_check");
  graph.annotation_origins[kGilCheckAnnotation] = {"python-binding.gil_check"};
}

}  // namespace cuvil::passes
