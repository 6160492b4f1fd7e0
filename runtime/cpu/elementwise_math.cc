#include "runtime/cpu/elementwise_math.h"

#include <cmath>

#include "passes/ir/error.h"

#include "runtime/cpu/elementwise_math_avx512.h"

namespace cuvil::runtime::cpu {

namespace {

#ifdef __AVX512F__
inline __m512 exp512(__m512 x) {
  return avx512::exp(x);
}
inline __m512 sigmoid512(__m512 x) {
  return avx512::sigmoid(x);
}

template <class V, class S>
void map_unary(const float* x, float* y, int64_t n, V vec, S scalar) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, vec(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, vec(_mm512_maskz_loadu_ps(m, x + i)));
  }
  (void)scalar;
}
#else
template <class V, class S>
void map_unary(const float* x, float* y, int64_t n, V, S scalar) {
  for (int64_t i = 0; i < n; ++i) y[i] = scalar(x[i]);
}
#endif

inline float sigmoid1(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}
inline float gelu1(float v) {
  return static_cast<float>(0.5 * v * (1.0 + std::erf(v * 0.70710678118654752440)));
}

template <class F>
void map_binary(const float* a, const float* b, int64_t bs, float* y, int64_t n, F f) {
  if (bs == 0) {
    const float s = *b;
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], s);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  }
}

}  // namespace

void unary_run(ir::OpKind op, const float* x, float* y, int64_t n) {
  switch (op) {
    case ir::OpKind::relu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case ir::OpKind::sigmoid:
#ifdef __AVX512F__
      map_unary(
          x, y, n, [](__m512 v) { return sigmoid512(v); }, sigmoid1);
#else
      map_unary(x, y, n, 0, sigmoid1);
#endif
      return;
    case ir::OpKind::silu:
#ifdef __AVX512F__
      map_unary(
          x, y, n, [](__m512 v) { return _mm512_mul_ps(v, sigmoid512(v)); },
          [](float v) { return v * sigmoid1(v); });
#else
      map_unary(x, y, n, 0, [](float v) { return v * sigmoid1(v); });
#endif
      return;
    case ir::OpKind::gelu:
      // Exact erf GELU (vector erf within 1.5e-7 of std::erf).
#ifdef __AVX512F__
      map_unary(
          x, y, n, [](__m512 v) { return avx512::gelu(v); }, gelu1);
#else
      map_unary(x, y, n, 0, gelu1);
#endif
      return;
    default:
      CUVIL_CHECK(false, "unary_run: not a unary op");
  }
}

void binary_run(ir::OpKind op, const float* a, const float* b, int64_t b_stride, float* y,
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
    default:
      CUVIL_CHECK(false, "binary_run: not a binary op");
  }
}

double exp_affine_sum(const float* x, float a, float b, float* y, int64_t n) {
#ifdef __AVX512F__
  const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp512(_mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), vb));
    _mm512_storeu_ps(y + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  double sum = _mm512_reduce_add_ps(acc);
  for (; i < n; ++i) {
    y[i] = std::exp(a * x[i] + b);
    sum += y[i];
  }
  return sum;
#else
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = std::exp(a * x[i] + b);
    sum += y[i];
  }
  return sum;
#endif
}

}  // namespace cuvil::runtime::cpu
