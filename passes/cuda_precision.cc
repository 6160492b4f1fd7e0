#include "passes/cuda_precision.h"

#include <set>

#include "runtime/cuda/attrs.h"

namespace cuvil::passes {

namespace {

const std::vector<std::string> kTypes = {"f32", "tf32", "bf16", "f16"};

}  // namespace

std::vector<ParamSpec> CudaPrecisionPass::params() const {
  return {
      choice_param("linear_dtype", kTypes, "f32",
                   "linear layers (bound: f32 1e-4, otherwise the bf16 bound 1e-1)"),
      choice_param("matmul_dtype", kTypes, "f32", "activation x activation matmuls"),
      choice_param("conv_dtype", kTypes, "f32", "convolutions"),
      int_param("min_k", 1, 65536, 1,
                "products with a reduction depth K below this stay f32 (conversion would cost "
                "more than it saves)",
                Scale::log),
  };
}

void CudaPrecisionPass::run(ir::Graph& graph, const ParamMap& params) const {
  const int64_t min_k = param_int(params, "min_k");
  std::set<ir::ValueId> bf16_weights, f32_weight_users;
  for (ir::Node& n : graph.mutable_nodes()) {
    std::string dtype;
    int64_t k = 0;
    switch (n.op) {
      case ir::OpKind::linear:
        dtype = param_choice(params, "linear_dtype");
        k = graph.value(n.inputs[1]).shape[1];
        break;
      case ir::OpKind::matmul:
        dtype = param_choice(params, "matmul_dtype");
        k = graph.value(n.inputs[0]).shape.back();
        break;
      case ir::OpKind::conv2d: {
        dtype = param_choice(params, "conv_dtype");
        const ir::Shape& w = graph.value(n.inputs[1]).shape;
        k = w[1] * w[2] * w[3];
        break;
      }
      default:
        continue;
    }
    const bool half = dtype == "bf16" || dtype == "f16";
    // 16-bit weights are uploaded once: a weight computed at run time stays f32.
    const bool weight_constant = n.op == ir::OpKind::matmul || graph.is_constant(n.inputs[1]);
    if (k < min_k || (half && !weight_constant)) {
      n.attrs.set(runtime::cuda::attrs::kPrecision, std::string("f32"));
      if (n.op != ir::OpKind::matmul) f32_weight_users.insert(n.inputs[1]);
      continue;
    }
    n.attrs.set(runtime::cuda::attrs::kPrecision, dtype);
    graph.annotations["cuda-precision." + dtype] += 1;
    if (n.op == ir::OpKind::matmul) continue;
    if (dtype == "bf16") {
      bf16_weights.insert(n.inputs[1]);
    } else {
      f32_weight_users.insert(n.inputs[1]);
    }
  }
  for (ir::ValueId w : bf16_weights) {
    if (!f32_weight_users.count(w)) graph.mutable_value(w).dtype = ir::DType::bf16;
  }
}

}  // namespace cuvil::passes
