#include "runtime/cpu/elementwise_math.h"

#include <cmath>

#include "passes/ir/error.h"

#ifdef __AVX512F__
// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register and warn about it
// where they are inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace cuvil::runtime::cpu {

namespace {

#ifdef __AVX512F__
// exp(x) = 2^n * 2^f with n = round(x*log2 e): a degree-6 polynomial for 2^f on [-0.5, 0.5]
// gives ~2 ulp, far inside the 1e-4 budget.
inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // f*ln2 computed in two parts for accuracy.
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

inline __m512 sigmoid512(__m512 x) {
  const __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
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
      // Exact erf GELU; scalar erf (no vector erf in the toolchain without fast-math).
      for (int64_t i = 0; i < n; ++i) y[i] = gelu1(x[i]);
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
