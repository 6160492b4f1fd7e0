#include "passes/cuda_tiling.h"

#include "runtime/cuda/attrs.h"

namespace cuvil::passes {

namespace attrs = runtime::cuda::attrs;

std::vector<ParamSpec> CudaGemmTilingPass::params() const {
  return {
      int_param("block_m", 16, 256, 128, "rows of C per thread block", Scale::log),
      int_param("block_n", 16, 256, 128, "columns of C per thread block", Scale::log),
      int_param("block_k", 16, 128, 32, "depth of each shared-memory stage", Scale::log),
      int_param("warp_m", 16, 128, 64, "rows of C per warp (block_m / warp_m warps down)",
                Scale::log),
      int_param("warp_n", 8, 128, 64, "columns of C per warp", Scale::log),
      int_param("stages", 2, 6, 3, "cp.async pipeline depth (shared-memory stages)"),
      int_param("vector_width", 1, 8, 8,
                "elements per global load (8 x 16-bit = 16 bytes); narrowed to what the "
                "leading dimensions allow",
                Scale::log),
  };
}

void CudaGemmTilingPass::run(ir::Graph& graph, const ParamMap& params) const {
  for (ir::Node& n : graph.mutable_nodes()) {
    if (n.op != ir::OpKind::linear && n.op != ir::OpKind::matmul && n.op != ir::OpKind::conv2d) {
      continue;
    }
    n.attrs.set(attrs::kGemmBlockM, param_int(params, "block_m"));
    n.attrs.set(attrs::kGemmBlockN, param_int(params, "block_n"));
    n.attrs.set(attrs::kGemmBlockK, param_int(params, "block_k"));
    n.attrs.set(attrs::kGemmWarpM, param_int(params, "warp_m"));
    n.attrs.set(attrs::kGemmWarpN, param_int(params, "warp_n"));
    n.attrs.set(attrs::kGemmStages, param_int(params, "stages"));
    n.attrs.set(attrs::kGemmVectorWidth, param_int(params, "vector_width"));
  }
}

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
