// AVX-512 row kernels of the norms and softmax (the portable ones are in norms.cc). This file
// alone is compiled for AVX-512 (the target pragma below) and runs only when norms_isa() is
// avx512; headers come before the pragma, so that no inline code of theirs is compiled for it.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "runtime/cpu/norms_kernels.h"

#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/elementwise_math_avx512.h"
#include "runtime/cpu/norms_row_loops.h"

namespace cuvil::runtime::cpu {

namespace {

// sum over x of f(x), f applied to 16 lanes at a time.
template <class F>
double chunked_sum(const float* x, int64_t n, F f) {
  double total = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kNormSumChunk) {
    const int64_t len = std::min(kNormSumChunk, n - c0);
    const float* p = x + c0;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= len; i += 32) {
      a0 = _mm512_add_ps(a0, f(_mm512_loadu_ps(p + i)));
      a1 = _mm512_add_ps(a1, f(_mm512_loadu_ps(p + i + 16)));
    }
    for (; i < len; i += 16) {
      const __mmask16 m = avx512::first_lanes(len - i);
      a0 = _mm512_add_ps(a0, _mm512_maskz_mov_ps(m, f(_mm512_maskz_loadu_ps(m, p + i))));
    }
    total += _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
  }
  return total;
}

// Function objects, not captureless lambdas: GCC 12 compiles a lambda's conversion to a function
// pointer without the target pragma, and warns about the __m512 ABI.
struct Identity {
  __m512 operator()(__m512 v) const { return v; }
};
struct Square {
  __m512 operator()(__m512 v) const { return _mm512_mul_ps(v, v); }
};

double sum(const float* x, int64_t n) {
  return chunked_sum(x, n, Identity{});
}
double sum_sq(const float* x, int64_t n) {
  return chunked_sum(x, n, Square{});
}
double sum_sq_dev(const float* x, int64_t n, float mean) {
  const __m512 m = _mm512_set1_ps(mean);
  return chunked_sum(x, n, [m](__m512 v) {
    const __m512 d = _mm512_sub_ps(v, m);
    return _mm512_mul_ps(d, d);
  });
}

float row_max(const float* x, int64_t n) {
  __m512 v = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < n; i += 16) {
    v = _mm512_max_ps(v, _mm512_mask_loadu_ps(v, avx512::first_lanes(n - i), x + i));
  }
  return _mm512_reduce_max_ps(v);
}

constexpr NormRowKernels kAvx512{sum, sum_sq, sum_sq_dev, row_max, rms_row_loop, layer_row_loop};

}  // namespace

const NormRowKernels& norm_row_kernels_avx512() {
  return kAvx512;
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
