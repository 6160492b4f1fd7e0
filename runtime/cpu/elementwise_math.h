// Unary activations and binary arithmetic on contiguous runs of floats, shared by the
// elementwise kernels and by fused epilogues. AVX-512 or AVX2 versions where the CPU has them.
#pragma once

#include <cstdint>

#include "passes/ir/op.h"

namespace cuvil::runtime::cpu {

// y[i] = op(x[i]) for every unary elementwise op (ir::is_unary_elementwise), with the
// parameterised ops' constants in `params`; x may equal y.
void unary_run(ir::OpKind op, const float* x, float* y, int64_t n,
               const ir::UnaryParams& params = {});

// y[i] = a[i] op b[i*b_stride] for every binary elementwise op; b_stride is 0 (broadcast
// scalar) or 1. a may equal y.
void binary_run(ir::OpKind op, const float* a, const float* b, int64_t b_stride, float* y,
                int64_t n);

}  // namespace cuvil::runtime::cpu

namespace cuvil::runtime::cpu {

// y[i] = exp(a * x[i] + b); returns the sum of y (accumulated in fp32 lanes, then double).
// Used by softmax and attention with b = -a * max so that every exponent is <= 0.
double exp_affine_sum(const float* x, float a, float b, float* y, int64_t n);

}  // namespace cuvil::runtime::cpu
