#include "runtime/cuda/codegen/epilogue.h"

#include "base/error.h"

namespace cuvil::runtime::cuda::codegen {

bool is_unary_step(ir::OpKind op) {
  return op == ir::OpKind::relu || op == ir::OpKind::silu || op == ir::OpKind::gelu ||
         op == ir::OpKind::sigmoid;
}

bool is_binary_step(ir::OpKind op) {
  return op == ir::OpKind::add || op == ir::OpKind::sub || op == ir::OpKind::mul ||
         op == ir::OpKind::div;
}

int epilogue_operand_count(const std::vector<EpilogueStepSpec>& steps) {
  int count = 0;
  for (const EpilogueStepSpec& step : steps) count += is_binary_step(step.op) ? 1 : 0;
  return count;
}

void validate_epilogue(const std::vector<EpilogueStepSpec>& steps) {
  for (const EpilogueStepSpec& step : steps) {
    if (!is_unary_step(step.op) && !is_binary_step(step.op)) {
      throw UserError("epilogue: op '" + std::string(ir::to_string(step.op)) +
                      "' is not an elementwise epilogue step");
    }
  }
  if (epilogue_operand_count(steps) > kMaxEpilogueOperands) {
    throw UserError("epilogue: " + std::to_string(epilogue_operand_count(steps)) +
                    " binary operands, at most " + std::to_string(kMaxEpilogueOperands));
  }
}

std::string_view epilogue_operand_struct() {
  return "struct EpilogueOperand { const void* data; i64 batch_stride, row_stride, col_stride; "
         "};\n";
}

std::string epilogue_code(const std::vector<EpilogueStepSpec>& steps, const std::string& value,
                          const std::string& b, const std::string& r, const std::string& c,
                          const std::string& operands_expr) {
  std::string code;
  int operand = 0;
  for (const EpilogueStepSpec& step : steps) {
    if (is_unary_step(step.op)) {
      code += value + " = cuvil_" + std::string(ir::to_string(step.op)) + "(" + value + ");\n";
      continue;
    }
    const std::string arg = operands_expr + "[" + std::to_string(operand++) + "]";
    const std::string index = "(" + b + ") * " + arg + ".batch_stride + (" + r + ") * " + arg +
                              ".row_stride + (" + c + ") * " + arg + ".col_stride";
    const std::string rhs = load_expr(step.operand_type, arg + ".data", index);
    const char* symbol = step.op == ir::OpKind::add   ? "+"
                         : step.op == ir::OpKind::sub ? "-"
                         : step.op == ir::OpKind::mul ? "*"
                                                      : "/";
    code += value + " = " + value + " " + symbol + " " + rhs + ";\n";
  }
  return code;
}

}  // namespace cuvil::runtime::cuda::codegen
