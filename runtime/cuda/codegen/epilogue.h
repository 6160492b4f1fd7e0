// Fused epilogues in generated kernels: the ir::EpilogueStep chain (passes/ir/op.h) applied to a
// kernel's fp32 result before it is stored. Binary steps read an operand tensor broadcast to the
// result through per-kernel-launch strides (0 = broadcast along that dimension).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "passes/ir/op.h"
#include "runtime/cuda/codegen/kernel_source.h"

namespace cuvil::runtime::cuda::codegen {

// At most this many binary epilogue operands per kernel (the params struct has fixed slots).
inline constexpr int kMaxEpilogueOperands = 4;

struct EpilogueStepSpec {
  ir::OpKind op = ir::OpKind::relu;       // relu/silu/gelu/sigmoid or add/sub/mul/div
  ElemType operand_type = ElemType::f32;  // binary steps only
  bool operator==(const EpilogueStepSpec&) const = default;
};

// One binary operand as the kernel sees it: element (batch b, row r, col c) of the result reads
// data[b * batch_stride + r * row_stride + c * col_stride] (strides in elements).
struct EpilogueOperandArg {
  const void* data = nullptr;
  int64_t batch_stride = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

// The epilogue ops without an operand (relu, silu, gelu, sigmoid) and those with one (add, sub,
// mul, div).
bool is_unary_step(ir::OpKind op);
bool is_binary_step(ir::OpKind op);

// Throws UserError for an op that is not an elementwise epilogue op or too many operands.
void validate_epilogue(const std::vector<EpilogueStepSpec>& steps);
int epilogue_operand_count(const std::vector<EpilogueStepSpec>& steps);

// CUDA statements applying `steps` to float variable `value` for result element (b, r, c) (names
// of int64 variables in scope); operand k is `operands_expr`[k] (an EpilogueOperandArg-shaped
// device struct with fields data/batch_stride/row_stride/col_stride).
std::string epilogue_code(const std::vector<EpilogueStepSpec>& steps, const std::string& value,
                          const std::string& b, const std::string& r, const std::string& c,
                          const std::string& operands_expr);

// The device-side struct matching EpilogueOperandArg (same layout: 4 x 8 bytes).
std::string_view epilogue_operand_struct();

}  // namespace cuvil::runtime::cuda::codegen
