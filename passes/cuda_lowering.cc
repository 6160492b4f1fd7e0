#include "passes/cuda_lowering.h"

#include "runtime/cuda/attrs.h"

namespace cuvil::passes {

namespace {

// The op class's parameter, or nullptr when the op has no choice.
const char* class_param(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::conv2d:
      return "conv";
    case ir::OpKind::linear:
      return "linear";
    case ir::OpKind::matmul:
      return "matmul";
    case ir::OpKind::sdpa:
      return "attention";
    case ir::OpKind::layer_norm:
    case ir::OpKind::rms_norm:
    case ir::OpKind::group_norm:
    case ir::OpKind::softmax:
      return "norm";
    default:
      return nullptr;
  }
}

}  // namespace

std::vector<ParamSpec> CudaLoweringPass::params() const {
  return {
      choice_param("conv", {"cudnn", "generated"}, "cudnn",
                   "convolutions: cuDNN, or the generated implicit-GEMM tensor-core kernel "
                   "(NHWC, tf32/bf16/f16 only: other nodes fall back to cuDNN)"),
      choice_param("linear", {"cublas", "cublaslt", "generated"}, "cublas",
                   "linear layers: cuBLAS, cuBLASLt (heuristic algorithm), or the generated "
                   "tensor-core GEMM (tf32/bf16/f16 only: f32 falls back to cuBLAS)"),
      choice_param("matmul", {"cublas", "cublaslt", "generated"}, "cublas",
                   "batched activation matmuls: as linear"),
      choice_param("attention", {"generated", "simple"}, "generated",
                   "scaled-dot-product attention: the generated flash kernel, or the simple "
                   "one-warp-per-query kernel"),
      choice_param("norm", {"generated", "simple"}, "generated",
                   "layer/RMS/group norm and softmax: the generated vectorised row kernels, or "
                   "the simple ones (softmax over another axis than the last is always simple)"),
  };
}

void CudaLoweringPass::run(ir::Graph& graph, const ParamMap& params) const {
  int64_t chosen = 0;
  for (ir::Node& n : graph.mutable_nodes()) {
    const char* param = class_param(n.op);
    if (param == nullptr || n.attrs.has(runtime::cuda::attrs::kKernel)) continue;
    n.attrs.set(runtime::cuda::attrs::kKernel,
                std::string(ir::to_string(n.op)) + "." + param_choice(params, param));
    ++chosen;
  }
  graph.annotations["cuda-lowering.nodes"] += chosen;
}

}  // namespace cuvil::passes
