// threading: how many threads the compiled plan runs on and how the GEMM splits its work
// between them. Sets graph annotations "threading.threads", "threading.spin_us",
// "threading.runtime" and "threading.balance" (read by lowering into Plan::threads, spin_us,
// thread_runtime, loop_balance) and node attribute "gemm.partition" on linear, matmul and conv2d
// nodes.
#pragma once

#include "passes/pass.h"

namespace cuvil::passes {

inline constexpr const char* kThreadsAnnotation = "threading.threads";
inline constexpr const char* kSpinAnnotation = "threading.spin_us";
// "threading.runtime": which threads run the plan (runtime::ThreadRuntime), or auto.
inline constexpr const char* kRuntimeAnnotation = "threading.runtime";
inline constexpr int64_t kRuntimeAuto = 0, kRuntimePool = 1, kRuntimeOpenmp = 2;
// "threading.balance": how balanced loops cut their work (runtime::LoopBalance).
inline constexpr const char* kBalanceAnnotation = "threading.balance";
inline constexpr int64_t kBalanceEqual = 0, kBalanceMeasured = 1;

class ThreadingPass final : public Pass {
 public:
  std::string_view name() const override { return "threading"; }
  std::string_view summary() const override {
    return "thread count of the plan and the GEMM's work partition between threads";
  }
  bool applies_to(std::string_view target) const override { return target == "cpu"; }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
