// AVX-512 unary and binary loops (the portable ones are in elementwise_math.cc). This file alone
// is compiled for AVX-512 (the target pragma below) and runs only when kernel_isa() is avx512.
// Project and standard headers come before the pragma, so that no inline code of theirs is
// compiled for AVX-512; elementwise_math_loops.h comes after it: its loops are file-local copies,
// vectorised here for AVX-512.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/error.h"
#include "passes/ir/op.h"
#include "runtime/cpu/elementwise_math.h"

#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/elementwise_math_avx512.h"
#include "runtime/cpu/elementwise_math_loops.h"

namespace cuvil::runtime::cpu {

namespace {

template <class V>
void map_unary(const float* x, float* y, int64_t n, V vec) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, vec(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, vec(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// The vector ops, as function objects: a captureless lambda's conversion to a function pointer
// would be compiled without the target pragma (GCC 12) and warn about the __m512 ABI.
struct Sigmoid {
  __m512 operator()(__m512 v) const { return avx512::sigmoid(v); }
};
struct Silu {
  __m512 operator()(__m512 v) const { return _mm512_mul_ps(v, avx512::sigmoid(v)); }
};
// Exact erf GELU (vector erf within 1.5e-7 of std::erf).
struct Gelu {
  __m512 operator()(__m512 v) const { return avx512::gelu(v); }
};
// tanh(v) = 2 sigmoid(2v) - 1: absolute error ~1e-7, like the other activations.
struct Tanh {
  __m512 operator()(__m512 v) const {
    const __m512 s = avx512::sigmoid(_mm512_add_ps(v, v));
    return _mm512_fmsub_ps(_mm512_set1_ps(2.0f), s, _mm512_set1_ps(1.0f));
  }
};
struct Erf {
  __m512 operator()(__m512 v) const { return avx512::erf(v); }
};
struct Sqrt {
  __m512 operator()(__m512 v) const { return _mm512_sqrt_ps(v); }
};
struct Exp {
  __m512 operator()(__m512 v) const { return avx512::exp(v); }
};

struct VectorOps {
  template <class F>
  static void map(const float* x, float* y, int64_t n, F f) {
    map_unary(x, y, n, f);
  }
  using Sigmoid = cpu::Sigmoid;
  using Silu = cpu::Silu;
  using Gelu = cpu::Gelu;
  using Tanh = cpu::Tanh;
  using Erf = cpu::Erf;
  using Sqrt = cpu::Sqrt;
  using Exp = cpu::Exp;
};

}  // namespace

void unary_run_avx512(ir::OpKind op, const float* x, float* y, int64_t n,
                      const ir::UnaryParams& p) {
  if (unary_loops(op, x, y, n, p)) return;
  map_vector_unary<VectorOps>(op, x, y, n);
}

void binary_run_avx512(ir::OpKind op, const float* a, const float* b, int64_t b_stride, float* y,
                       int64_t n) {
  binary_loops(op, a, b, b_stride, y, n);
}

double exp_affine_sum_avx512(const float* x, float a, float b, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = avx512::exp(_mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), vb));
    _mm512_storeu_ps(y + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  double sum = _mm512_reduce_add_ps(acc);
  for (; i < n; ++i) {
    y[i] = std::exp(a * x[i] + b);
    sum += y[i];
  }
  return sum;
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
