#include "runtime/cpu/elementwise_math.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

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

void unary_run(ir::OpKind op, const float* x, float* y, int64_t n, const ir::UnaryParams& p) {
#ifdef __AVX512F__
#define CUVIL_MAP(VEC, SCALAR) map_unary(x, y, n, VEC, SCALAR)
#else
#define CUVIL_MAP(VEC, SCALAR) map_unary(x, y, n, 0, SCALAR)
#endif
  switch (op) {
    case ir::OpKind::relu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case ir::OpKind::sigmoid:
      CUVIL_MAP([](__m512 v) { return sigmoid512(v); }, sigmoid1);
      return;
    case ir::OpKind::silu:
      CUVIL_MAP([](__m512 v) { return _mm512_mul_ps(v, sigmoid512(v)); },
                [](float v) { return v * sigmoid1(v); });
      return;
    case ir::OpKind::gelu:
      // Exact erf GELU (vector erf within 1.5e-7 of std::erf).
      CUVIL_MAP([](__m512 v) { return avx512::gelu(v); }, gelu1);
      return;
    case ir::OpKind::tanh:
      // tanh(v) = 2 sigmoid(2v) - 1: absolute error ~1e-7, like the other activations.
      CUVIL_MAP(
          [](__m512 v) {
            const __m512 s = sigmoid512(_mm512_add_ps(v, v));
            return _mm512_fmsub_ps(_mm512_set1_ps(2.0f), s, _mm512_set1_ps(1.0f));
          },
          [](float v) { return std::tanh(v); });
      return;
    case ir::OpKind::erf:
      CUVIL_MAP([](__m512 v) { return avx512::erf(v); }, [](float v) { return std::erf(v); });
      return;
    case ir::OpKind::sqrt:
      CUVIL_MAP([](__m512 v) { return _mm512_sqrt_ps(v); }, [](float v) { return std::sqrt(v); });
      return;
    case ir::OpKind::exp:
      CUVIL_MAP([](__m512 v) { return exp512(v); }, [](float v) { return std::exp(v); });
      return;
    case ir::OpKind::log:
      for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
      return;
    case ir::OpKind::neg:
      for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
      return;
    case ir::OpKind::abs:
      for (int64_t i = 0; i < n; ++i) y[i] = std::fabs(x[i]);
      return;
    case ir::OpKind::clip: {
      // NaN passes through (as PyTorch's clamp): compare so that NaN fails both tests.
      const float lo = p.a, hi = p.b;
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = v < lo ? lo : (v > hi ? hi : v);
      }
      return;
    }
    case ir::OpKind::hard_sigmoid: {
      const float alpha = p.a, beta = p.b;
      for (int64_t i = 0; i < n; ++i) y[i] = std::min(1.0f, std::max(0.0f, alpha * x[i] + beta));
      return;
    }
    case ir::OpKind::hard_swish:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = v * std::min(6.0f, std::max(0.0f, v + 3.0f)) * (1.0f / 6.0f);
      }
      return;
    case ir::OpKind::leaky_relu: {
      const float alpha = p.a;
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
      return;
    }
    default:
      CUVIL_CHECK(false, "unary_run: not a unary op");
  }
#undef CUVIL_MAP
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
    case ir::OpKind::pow:
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
