#include "passes/cuda_attention_tiling.h"

#include "runtime/cuda/attrs.h"

namespace cuvil::passes {

namespace attrs = runtime::cuda::attrs;

std::vector<ParamSpec> CudaAttentionTilingPass::params() const {
  return {
      int_param("block_q", 16, 256, 64, "queries per thread block", Scale::log),
      int_param("block_kv", 32, 256, 64,
                "keys/values staged in shared memory per step (a multiple of 32; other values "
                "and over-large tiles fall back to the simple kernel, saying why)",
                Scale::log),
      int_param("warps", 1, 32, 4, "warps per thread block (must divide block_q)", Scale::log),
  };
}

void CudaAttentionTilingPass::run(ir::Graph& graph, const ParamMap& params) const {
  for (ir::Node& n : graph.mutable_nodes()) {
    if (n.op != ir::OpKind::sdpa) continue;
    n.attrs.set(attrs::kAttentionBlockQ, param_int(params, "block_q"));
    n.attrs.set(attrs::kAttentionBlockKv, param_int(params, "block_kv"));
    n.attrs.set(attrs::kAttentionWarps, param_int(params, "warps"));
  }
}

}  // namespace cuvil::passes
