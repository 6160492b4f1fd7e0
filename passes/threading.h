// threading: how many threads the compiled plan runs on and how the GEMM splits its work
// between them. Sets graph annotations "threading.threads" and "threading.spin_us" (read by
// lowering into Plan::threads and Plan::spin_us) and node attribute "gemm.partition" on linear,
// matmul and conv2d nodes.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

inline constexpr const char* kThreadsAnnotation = "threading.threads";
inline constexpr const char* kSpinAnnotation = "threading.spin_us";

class ThreadingPass final : public Pass {
 public:
  std::string_view name() const override { return "threading"; }
  std::string_view summary() const override {
    return "thread count of the plan and the GEMM's work partition between threads";
  }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
