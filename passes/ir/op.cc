#include "passes/ir/op.h"

namespace cuvil::ir {

namespace {
constexpr std::string_view kOpNames[kOpKindCount] = {"conv2d",
                                                     "linear",
                                                     "matmul",
                                                     "batch_norm",
                                                     "group_norm",
                                                     "layer_norm",
                                                     "rms_norm",
                                                     "add",
                                                     "sub",
                                                     "mul",
                                                     "div",
                                                     "relu",
                                                     "silu",
                                                     "gelu",
                                                     "sigmoid",
                                                     "softmax",
                                                     "sdpa",
                                                     "rope",
                                                     "max_pool2d",
                                                     "avg_pool2d",
                                                     "global_avg_pool",
                                                     "upsample_nearest2d",
                                                     "concat",
                                                     "slice",
                                                     "reshape",
                                                     "transpose",
                                                     "embedding",
                                                     "tanh",
                                                     "erf",
                                                     "sqrt",
                                                     "exp",
                                                     "log",
                                                     "neg",
                                                     "abs",
                                                     "clip",
                                                     "hard_sigmoid",
                                                     "hard_swish",
                                                     "leaky_relu",
                                                     "pow",
                                                     "max",
                                                     "min",
                                                     "reduce_mean",
                                                     "reduce_sum",
                                                     "reduce_max",
                                                     "pad",
                                                     "gather",
                                                     "where",
                                                     "expand",
                                                     "compare",
                                                     "cumsum",
                                                     "sin",
                                                     "cos",
                                                     "floor",
                                                     "ceil",
                                                     "round",
                                                     "sign",
                                                     "cast",
                                                     "tan",
                                                     "asin",
                                                     "acos",
                                                     "atan",
                                                     "sinh",
                                                     "cosh",
                                                     "asinh",
                                                     "acosh",
                                                     "atanh",
                                                     "scatter"};
}  // namespace

std::string_view to_string(OpKind op) {
  return kOpNames[static_cast<int>(op)];
}

bool is_unary_elementwise(OpKind op) {
  switch (op) {
    case OpKind::relu:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::erf:
    case OpKind::sqrt:
    case OpKind::exp:
    case OpKind::log:
    case OpKind::neg:
    case OpKind::abs:
    case OpKind::clip:
    case OpKind::hard_sigmoid:
    case OpKind::hard_swish:
    case OpKind::leaky_relu:
    case OpKind::sin:
    case OpKind::cos:
    case OpKind::floor:
    case OpKind::ceil:
    case OpKind::round:
    case OpKind::sign:
    case OpKind::tan:
    case OpKind::asin:
    case OpKind::acos:
    case OpKind::atan:
    case OpKind::sinh:
    case OpKind::cosh:
    case OpKind::asinh:
    case OpKind::acosh:
    case OpKind::atanh:
      return true;
    default:
      return false;
  }
}

bool is_binary_elementwise(OpKind op) {
  switch (op) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
    case OpKind::pow:
    case OpKind::max:
    case OpKind::min:
      return true;
    default:
      return false;
  }
}

bool is_reduction(OpKind op) {
  return op == OpKind::reduce_mean || op == OpKind::reduce_sum || op == OpKind::reduce_max;
}

std::string_view to_string(ScatterReduction reduction) {
  switch (reduction) {
    case ScatterReduction::none:
      return "none";
    case ScatterReduction::add:
      return "add";
    case ScatterReduction::mul:
      return "mul";
    case ScatterReduction::max:
      return "max";
    case ScatterReduction::min:
      return "min";
  }
  return "?";
}

std::string_view to_string(CompareMode mode) {
  switch (mode) {
    case CompareMode::equal:
      return "equal";
    case CompareMode::not_equal:
      return "not_equal";
    case CompareMode::less:
      return "less";
    case CompareMode::less_equal:
      return "less_equal";
    case CompareMode::greater:
      return "greater";
    case CompareMode::greater_equal:
      return "greater_equal";
  }
  return "?";
}

size_t epilogue_operand_count(const std::vector<EpilogueStep>& epilogue) {
  size_t n = 0;
  for (const EpilogueStep& step : epilogue) n += is_binary_elementwise(step.op) ? 1 : 0;
  return n;
}

bool is_layout_aware(OpKind op) {
  switch (op) {
    case OpKind::conv2d:
    case OpKind::batch_norm:
    case OpKind::group_norm:
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
    case OpKind::global_avg_pool:
    case OpKind::upsample_nearest2d:
      return true;
    default:
      return false;
  }
}

}  // namespace cuvil::ir
