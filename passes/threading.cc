#include "passes/threading.h"

#include "runtime/cpu/attrs.h"

namespace cuvil::passes {

std::vector<ParamSpec> ThreadingPass::params() const {
  return {
      int_param("threads", 0, 64, 0,
                "threads of the plan's pool; 0 = the command line's --threads (default: all "
                "cores)"),
      choice_param("partition", {"auto", "m", "n", "2d"}, "auto",
                   "how a GEMM splits C between threads: auto (N strips when N has >= 4 "
                   "register tiles per thread, else M strips; bf16, whose B is packed before "
                   "the product, takes M strips when M has >= 4 tiles per thread and 2M >= N), "
                   "m (row strips), n (column "
                   "strips), 2d (a grid that packs least per thread); products of <= 4 rows "
                   "always split N"),
      int_param("spin_us", 0, 20000, 50,
                "microseconds an idle pool thread spins for the next parallel loop before "
                "sleeping: waking a sleeping thread costs tens of microseconds, several times "
                "per step (ResNet-50 b1 measured 12% slower with 0), but a spinning thread "
                "holds its core, and with another busy process on the cores 1000 made b1 2.3x "
                "slower than 50"),
      choice_param("runtime", {"auto", "pool", "openmp"}, "auto",
                   "threads that run the plan's parallel loops: pool (the runtime's own, "
                   "spinning spin_us between loops), openmp (an OpenMP team, the threads "
                   "oneDNN runs on), auto (openmp when a step is lowered to oneDNN, so that two "
                   "sets of threads never compete for the cores)"),
      choice_param("balance", {"equal", "measured"}, "measured",
                   "where GEMM strips, Winograd tiles and bf16 direct-convolution rows are cut "
                   "between the pool's threads: equal (equal parts), measured (each step's "
                   "cuts follow how long each thread took on it the runs before, moving only "
                   "for a predicted 3% gain; for a core shared with other work, or a half whose "
                   "data is in the other core's cache); the openmp runtime cuts equal parts")};
}

void ThreadingPass::run(ir::Graph& graph, const ParamMap& params) const {
  const int64_t threads = param_int(params, "threads");
  if (threads > 0) {
    graph.annotations[kThreadsAnnotation] = threads;
  } else {
    graph.annotations.erase(kThreadsAnnotation);
  }
  graph.annotations[kSpinAnnotation] = param_int(params, "spin_us");
  const std::string& runtime = param_choice(params, "runtime");
  graph.annotations[kRuntimeAnnotation] = runtime == "pool"     ? kRuntimePool
                                          : runtime == "openmp" ? kRuntimeOpenmp
                                                                : kRuntimeAuto;
  graph.annotations[kBalanceAnnotation] =
      param_choice(params, "balance") == "equal" ? kBalanceEqual : kBalanceMeasured;
  graph.annotation_origins[kBalanceAnnotation] = {"threading.balance"};
  graph.annotation_origins[kThreadsAnnotation] = {"threading.threads"};
  graph.annotation_origins[kSpinAnnotation] = {"threading.spin_us"};
  graph.annotation_origins[kRuntimeAnnotation] = {"threading.runtime"};
  const std::string& partition = param_choice(params, "partition");
  for (ir::Node& n : graph.mutable_nodes()) {
    if (n.op == ir::OpKind::linear || n.op == ir::OpKind::matmul || n.op == ir::OpKind::conv2d) {
      n.attrs.set(runtime::cpu::attrs::kGemmPartition, partition, "threading.partition");
    }
  }
}

}  // namespace cuvil::passes
