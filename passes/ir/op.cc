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
                                                     "embedding"};
}  // namespace

std::string_view to_string(OpKind op) {
  return kOpNames[static_cast<int>(op)];
}

std::optional<OpKind> parse_op(std::string_view name) {
  for (int i = 0; i < kOpKindCount; ++i) {
    if (kOpNames[i] == name) return static_cast<OpKind>(i);
  }
  return std::nullopt;
}

bool is_unary_elementwise(OpKind op) {
  return op == OpKind::relu || op == OpKind::silu || op == OpKind::gelu || op == OpKind::sigmoid;
}

bool is_binary_elementwise(OpKind op) {
  return op == OpKind::add || op == OpKind::sub || op == OpKind::mul || op == OpKind::div;
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
