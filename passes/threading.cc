#include "passes/threading.h"

namespace cuvil::passes {

std::vector<ParamSpec> ThreadingPass::params() const {
  ParamSpec threads;
  threads.name = "threads";
  threads.type = ParamSpec::Type::integer;
  threads.int_min = 0;
  threads.int_max = 64;
  threads.default_value = int64_t{0};
  threads.help =
      "threads of the plan's pool; 0 = the command line's --threads (default: all cores)";
  ParamSpec partition;
  partition.name = "partition";
  partition.type = ParamSpec::Type::choice;
  partition.choices = {"auto", "m", "n", "2d"};
  partition.default_value = std::string("auto");
  partition.help =
      "how a GEMM splits C between threads: auto (N strips when N has >= 4 register tiles per "
      "thread, else M strips), m (row strips), n (column strips), 2d (a grid that packs least "
      "per thread); products of <= 4 rows always split N";
  return {threads, partition};
}

void ThreadingPass::run(ir::Graph& graph, const ParamMap& params) const {
  const int64_t threads = param_int(params, "threads");
  if (threads > 0) {
    graph.annotations[kThreadsAnnotation] = threads;
  } else {
    graph.annotations.erase(kThreadsAnnotation);
  }
  const std::string& partition = param_choice(params, "partition");
  for (ir::Node& n : graph.mutable_nodes()) {
    if (n.op == ir::OpKind::linear || n.op == ir::OpKind::matmul || n.op == ir::OpKind::conv2d) {
      n.attrs.set("gemm.partition", partition);
    }
  }
}

}  // namespace cuvil::passes
