#include "passes/cuda_gemm_tiling.h"

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

}  // namespace cuvil::passes
