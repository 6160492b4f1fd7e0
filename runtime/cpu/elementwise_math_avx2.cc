// AVX2 + FMA unary and binary loops (the portable ones are in elementwise_math.cc, the AVX-512
// ones in elementwise_math_avx512.cc). This file alone is compiled for AVX2 (the target pragma
// below) and runs only when elementwise_math_isa() is avx2. Project and standard headers come
// before the pragma; elementwise_math_loops.h comes after it: its loops are file-local copies,
// vectorised here for AVX2.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/error.h"
#include "passes/ir/op.h"
#include "runtime/cpu/elementwise_math.h"

#include "runtime/cpu/target_avx2_begin.h"

#include "runtime/cpu/elementwise_math_avx2.h"
#include "runtime/cpu/elementwise_math_loops.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int64_t kLanes8 = 8;

template <class V>
void map_unary(const float* x, float* y, int64_t n, V vec) {
  int64_t i = 0;
  for (; i + kLanes8 <= n; i += kLanes8) _mm256_storeu_ps(y + i, vec(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = avx2::first_lanes(n - i);
    _mm256_maskstore_ps(y + i, m, vec(_mm256_maskload_ps(x + i, m)));
  }
}

// Function objects, not captureless lambdas (as in elementwise_math_avx512.cc).
struct Sigmoid {
  __m256 operator()(__m256 v) const { return avx2::sigmoid(v); }
};
struct Silu {
  __m256 operator()(__m256 v) const { return _mm256_mul_ps(v, avx2::sigmoid(v)); }
};
struct Gelu {
  __m256 operator()(__m256 v) const { return avx2::gelu(v); }
};
// tanh(v) = 2 sigmoid(2v) - 1.
struct Tanh {
  __m256 operator()(__m256 v) const {
    const __m256 s = avx2::sigmoid(_mm256_add_ps(v, v));
    return _mm256_fmsub_ps(_mm256_set1_ps(2.0f), s, _mm256_set1_ps(1.0f));
  }
};
struct Erf {
  __m256 operator()(__m256 v) const { return avx2::erf(v); }
};
struct Sqrt {
  __m256 operator()(__m256 v) const { return _mm256_sqrt_ps(v); }
};
struct Exp {
  __m256 operator()(__m256 v) const { return avx2::exp(v); }
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

void unary_run_avx2(ir::OpKind op, const float* x, float* y, int64_t n, const ir::UnaryParams& p) {
  if (unary_loops(op, x, y, n, p)) return;
  map_vector_unary<VectorOps>(op, x, y, n);
}

void binary_run_avx2(ir::OpKind op, const float* a, const float* b, int64_t b_stride, float* y,
                     int64_t n) {
  binary_loops(op, a, b, b_stride, y, n);
}

double exp_affine_sum_avx2(const float* x, float a, float b, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + kLanes8 <= n; i += kLanes8) {
    const __m256 e = avx2::exp(_mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), vb));
    _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[kLanes8];
  _mm256_store_ps(lanes, acc);
  double sum = 0;
  for (float l : lanes) sum += l;
  for (; i < n; ++i) {
    y[i] = std::exp(a * x[i] + b);
    sum += y[i];
  }
  return sum;
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
