// AVX2 row kernels of the norms and softmax (the portable ones are in norms.cc, the AVX-512 ones
// in norms_avx512.cc). This file alone is compiled for AVX2 and FMA (the target pragma below) and
// runs only when norms_isa() is avx2; headers come before the pragma, so that no inline code of
// theirs is compiled for it.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "runtime/cpu/norms_kernels.h"

#include "runtime/cpu/target_avx2_begin.h"

#include "runtime/cpu/elementwise_math_avx2.h"
#include "runtime/cpu/norms_row_loops.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int64_t kLanes = 8;

// sum over x of f(x), f applied to 8 lanes at a time: fp32 lanes over chunks of kNormSumChunk,
// fp64 across them.
template <class F>
double chunked_sum(const float* x, int64_t n, F f) {
  double total = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kNormSumChunk) {
    const int64_t len = std::min(kNormSumChunk, n - c0);
    const float* p = x + c0;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 2 * kLanes <= len; i += 2 * kLanes) {
      a0 = _mm256_add_ps(a0, f(_mm256_loadu_ps(p + i)));
      a1 = _mm256_add_ps(a1, f(_mm256_loadu_ps(p + i + kLanes)));
    }
    for (; i < len; i += kLanes) {
      const __m256i m = avx2::first_lanes(len - i);
      a0 =
          _mm256_add_ps(a0, _mm256_and_ps(f(_mm256_maskload_ps(p + i, m)), _mm256_castsi256_ps(m)));
    }
    total += avx2::reduce_add(_mm256_add_ps(a0, a1));
  }
  return total;
}

// Function objects, not captureless lambdas: GCC 12 compiles a lambda's conversion to a function
// pointer without the target pragma, and warns about the __m256 ABI.
struct Identity {
  __m256 operator()(__m256 v) const { return v; }
};
struct Square {
  __m256 operator()(__m256 v) const { return _mm256_mul_ps(v, v); }
};

double sum(const float* x, int64_t n) {
  return chunked_sum(x, n, Identity{});
}
double sum_sq(const float* x, int64_t n) {
  return chunked_sum(x, n, Square{});
}
double sum_sq_dev(const float* x, int64_t n, float mean) {
  const __m256 m = _mm256_set1_ps(mean);
  return chunked_sum(x, n, [m](__m256 v) {
    const __m256 d = _mm256_sub_ps(v, m);
    return _mm256_mul_ps(d, d);
  });
}

float row_max(const float* x, int64_t n) {
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 v = neg_inf;
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m256i m = avx2::first_lanes(n - i);
    const __m256 x8 = _mm256_maskload_ps(x + i, m);
    v = _mm256_max_ps(v, _mm256_blendv_ps(neg_inf, x8, _mm256_castsi256_ps(m)));
  }
  return avx2::reduce_max(v);
}

constexpr NormRowKernels kAvx2{sum, sum_sq, sum_sq_dev, row_max, rms_row_loop, layer_row_loop};

}  // namespace

const NormRowKernels& norm_row_kernels_avx2() {
  return kAvx2;
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
