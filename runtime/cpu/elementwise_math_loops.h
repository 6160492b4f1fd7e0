// What elementwise_math.cc (portable), elementwise_math_avx512.cc and elementwise_math_avx2.cc
// share: the vector entry points, and the loops without a vector form of their own. The loops sit
// in an unnamed namespace, so each file compiles them for its own instruction set (the AVX-512 file
// includes this header after its target pragma, having included the headers below before it, so its
// copies are vectorised for AVX-512 whatever -march says) and no copy is shared between the two.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/error.h"
#include "passes/ir/op.h"

namespace cuvil::runtime::cpu {

// The AVX-512 versions of unary_run, binary_run and exp_affine_sum (elementwise_math.h); called
// only when kernel_isa() is avx512.
void unary_run_avx512(ir::OpKind op, const float* x, float* y, int64_t n,
                      const ir::UnaryParams& params);
void binary_run_avx512(ir::OpKind op, const float* a, const float* b, int64_t b_stride, float* y,
                       int64_t n);
double exp_affine_sum_avx512(const float* x, float a, float b, float* y, int64_t n);
// The AVX2 versions (elementwise_math_avx2.cc); called only when elementwise_math_isa() is avx2.
void unary_run_avx2(ir::OpKind op, const float* x, float* y, int64_t n,
                    const ir::UnaryParams& params);
void binary_run_avx2(ir::OpKind op, const float* a, const float* b, int64_t b_stride, float* y,
                     int64_t n);
double exp_affine_sum_avx2(const float* x, float a, float b, float* y, int64_t n);

namespace {

// The unary ops computed by plain loops whatever the instruction set; false for the others
// (sigmoid, silu, gelu, tanh, erf, sqrt, exp), which the caller maps itself.
inline bool unary_loops(ir::OpKind op, const float* x, float* y, int64_t n,
                        const ir::UnaryParams& p) {
  switch (op) {
    case ir::OpKind::relu:
      // NaN passes (as PyTorch's relu); the lane epilogues compute the same, bit for bit.
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
      return true;
    case ir::OpKind::log:
      for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
      return true;
    case ir::OpKind::sin:
      for (int64_t i = 0; i < n; ++i) y[i] = std::sin(x[i]);
      return true;
    case ir::OpKind::cos:
      for (int64_t i = 0; i < n; ++i) y[i] = std::cos(x[i]);
      return true;
    case ir::OpKind::tan:
      for (int64_t i = 0; i < n; ++i) y[i] = std::tan(x[i]);
      return true;
    case ir::OpKind::asin:
      for (int64_t i = 0; i < n; ++i) y[i] = std::asin(x[i]);
      return true;
    case ir::OpKind::acos:
      for (int64_t i = 0; i < n; ++i) y[i] = std::acos(x[i]);
      return true;
    case ir::OpKind::atan:
      for (int64_t i = 0; i < n; ++i) y[i] = std::atan(x[i]);
      return true;
    case ir::OpKind::sinh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::sinh(x[i]);
      return true;
    case ir::OpKind::cosh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::cosh(x[i]);
      return true;
    case ir::OpKind::asinh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::asinh(x[i]);
      return true;
    case ir::OpKind::acosh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::acosh(x[i]);
      return true;
    case ir::OpKind::atanh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::atanh(x[i]);
      return true;
    case ir::OpKind::floor:
      for (int64_t i = 0; i < n; ++i) y[i] = std::floor(x[i]);
      return true;
    case ir::OpKind::ceil:
      for (int64_t i = 0; i < n; ++i) y[i] = std::ceil(x[i]);
      return true;
    case ir::OpKind::round:
      for (int64_t i = 0; i < n; ++i) y[i] = std::nearbyint(x[i]);
      return true;
    case ir::OpKind::sign:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v;
      }
      return true;
    case ir::OpKind::neg:
      for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
      return true;
    case ir::OpKind::abs:
      for (int64_t i = 0; i < n; ++i) y[i] = std::fabs(x[i]);
      return true;
    case ir::OpKind::clip: {
      // NaN passes through (as PyTorch's clamp): compare so that NaN fails both tests.
      const float lo = p.a, hi = p.b;
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = v < lo ? lo : (v > hi ? hi : v);
      }
      return true;
    }
    case ir::OpKind::hard_sigmoid: {
      const float alpha = p.a, beta = p.b;
      // NaN passes: std::max and std::min return their first argument when comparing with NaN.
      for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(alpha * x[i] + beta, 0.0f), 1.0f);
      return true;
    }
    case ir::OpKind::hard_swish:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = v * std::min(6.0f, std::max(0.0f, v + 3.0f)) * (1.0f / 6.0f);
      }
      return true;
    case ir::OpKind::leaky_relu: {
      const float alpha = p.a;
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
      return true;
    }
    default:
      return false;
  }
}

template <class F>
inline void map_binary(const float* a, const float* b, int64_t bs, float* y, int64_t n, F f) {
  if (bs == 0) {
    const float s = *b;
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], s);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  }
}

// The unary ops computed through an instruction set's vector function objects: Ops has
// `static void map(x, y, n, F)` and the types Sigmoid, Silu, Gelu, Tanh, Erf, Sqrt and Exp (one
// switch for the AVX-512 and AVX2 files).
template <class Ops>
void map_vector_unary(ir::OpKind op, const float* x, float* y, int64_t n) {
  switch (op) {
    case ir::OpKind::sigmoid:
      return Ops::map(x, y, n, typename Ops::Sigmoid{});
    case ir::OpKind::silu:
      return Ops::map(x, y, n, typename Ops::Silu{});
    case ir::OpKind::gelu:
      return Ops::map(x, y, n, typename Ops::Gelu{});
    case ir::OpKind::tanh:
      return Ops::map(x, y, n, typename Ops::Tanh{});
    case ir::OpKind::erf:
      return Ops::map(x, y, n, typename Ops::Erf{});
    case ir::OpKind::sqrt:
      return Ops::map(x, y, n, typename Ops::Sqrt{});
    case ir::OpKind::exp:
      return Ops::map(x, y, n, typename Ops::Exp{});
    default:
      CUVIL_CHECK(false, "unary_run: not a unary op");
  }
}

inline void binary_loops(ir::OpKind op, const float* a, const float* b, int64_t b_stride, float* y,
                         int64_t n) {
  switch (op) {
    case ir::OpKind::add:
      map_binary(a, b, b_stride, y, n, [](float p, float q) { return p + q; });
      return;
    case ir::OpKind::sub:
      map_binary(a, b, b_stride, y, n, [](float p, float q) { return p - q; });
      return;
    case ir::OpKind::mul:
      map_binary(a, b, b_stride, y, n, [](float p, float q) { return p * q; });
      return;
    case ir::OpKind::div:
      map_binary(a, b, b_stride, y, n, [](float p, float q) { return p / q; });
      return;
    case ir::OpKind::pow:
      // A constant exponent of 2 or 3 (norms' x^2, GPT-2's tanh GELU x^3) as products, which
      // vectorise: std::pow per element costs about twenty multiplies.
      if (b_stride == 0 && (*b == 2.0f || *b == 3.0f)) {
        if (*b == 2.0f) {
          for (int64_t i = 0; i < n; ++i) y[i] = a[i] * a[i];
        } else {
          for (int64_t i = 0; i < n; ++i) y[i] = a[i] * a[i] * a[i];
        }
        return;
      }
      map_binary(a, b, b_stride, y, n, [](float p, float q) {
        return q == 2.0f ? p * p : static_cast<float>(std::pow(p, q));
      });
      return;
    case ir::OpKind::max:
      map_binary(a, b, b_stride, y, n, [](float p, float q) {
        return std::isnan(p) || std::isnan(q) ? p + q : std::max(p, q);
      });
      return;
    case ir::OpKind::min:
      map_binary(a, b, b_stride, y, n, [](float p, float q) {
        return std::isnan(p) || std::isnan(q) ? p + q : std::min(p, q);
      });
      return;
    default:
      CUVIL_CHECK(false, "binary_run: not a binary op");
  }
}

}  // namespace
}  // namespace cuvil::runtime::cpu
