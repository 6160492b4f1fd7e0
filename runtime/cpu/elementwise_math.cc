// The portable unary and binary loops (the reference of the AVX-512 and AVX2 ones in
// elementwise_math_avx512.cc and elementwise_math_avx2.cc), and the run-time choice among them.
#include "runtime/cpu/elementwise_math.h"

#include <cmath>

#include "base/error.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/elementwise_math_loops.h"

namespace cuvil::runtime::cpu {

namespace {

inline float sigmoid1(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}
inline float gelu1(float v) {
  return static_cast<float>(0.5 * v * (1.0 + std::erf(v * 0.70710678118654752440)));
}

template <class S>
void map_unary(const float* x, float* y, int64_t n, S scalar) {
  for (int64_t i = 0; i < n; ++i) y[i] = scalar(x[i]);
}

}  // namespace

KernelIsa elementwise_math_isa() {
  return kernel_isa();
}

void unary_run(ir::OpKind op, const float* x, float* y, int64_t n, const ir::UnaryParams& p) {
  const KernelIsa isa = elementwise_math_isa();
  if (isa == KernelIsa::avx512) {
    unary_run_avx512(op, x, y, n, p);
    return;
  }
  if (isa == KernelIsa::avx2) {
    unary_run_avx2(op, x, y, n, p);
    return;
  }
  if (unary_loops(op, x, y, n, p)) return;
  switch (op) {
    case ir::OpKind::sigmoid:
      map_unary(x, y, n, sigmoid1);
      return;
    case ir::OpKind::silu:
      map_unary(x, y, n, [](float v) { return v * sigmoid1(v); });
      return;
    case ir::OpKind::gelu:
      map_unary(x, y, n, gelu1);
      return;
    case ir::OpKind::tanh:
      map_unary(x, y, n, [](float v) { return std::tanh(v); });
      return;
    case ir::OpKind::erf:
      map_unary(x, y, n, [](float v) { return std::erf(v); });
      return;
    case ir::OpKind::sqrt:
      map_unary(x, y, n, [](float v) { return std::sqrt(v); });
      return;
    case ir::OpKind::exp:
      map_unary(x, y, n, [](float v) { return std::exp(v); });
      return;
    default:
      CUVIL_CHECK(false, "unary_run: not a unary op");
  }
}

void binary_run(ir::OpKind op, const float* a, const float* b, int64_t b_stride, float* y,
                int64_t n) {
  const KernelIsa isa = elementwise_math_isa();
  if (isa == KernelIsa::avx512) {
    binary_run_avx512(op, a, b, b_stride, y, n);
    return;
  }
  if (isa == KernelIsa::avx2) {
    binary_run_avx2(op, a, b, b_stride, y, n);
    return;
  }
  binary_loops(op, a, b, b_stride, y, n);
}

double exp_affine_sum(const float* x, float a, float b, float* y, int64_t n) {
  const KernelIsa isa = elementwise_math_isa();
  if (isa == KernelIsa::avx512) return exp_affine_sum_avx512(x, a, b, y, n);
  if (isa == KernelIsa::avx2) return exp_affine_sum_avx2(x, a, b, y, n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = std::exp(a * x[i] + b);
    sum += y[i];
  }
  return sum;
}

}  // namespace cuvil::runtime::cpu
