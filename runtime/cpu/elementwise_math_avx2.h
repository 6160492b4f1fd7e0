// Inline AVX2 + FMA transcendental functions (the AVX-512 ones' twins in
// elementwise_math_avx512.h, same polynomials and error bounds). Include only in an AVX2 file
// (`<kernel>_avx2.cc`), after its target_avx2_begin.h: the helpers sit in an unnamed namespace,
// so each such file compiles its own copy for AVX2.
#pragma once

#ifndef CUVIL_AVX2_FILE
#error "elementwise_math_avx2.h: include only after runtime/cpu/target_avx2_begin.h"
#endif
#include <immintrin.h>

#include <cstdint>

namespace cuvil::runtime::cpu::avx2 {
namespace {

// Vector lambdas capture by reference ([&]) though they use nothing: a lambda without captures
// also gets a function-pointer conversion, which GCC compiles outside the target pragma and
// warns about (-Wpsabi) in the portable build (-DCUVIL_NATIVE=OFF).

// p * 2^n for integral n in [-126, 128]: AVX2 has no scalef, so 2^n is built from its exponent
// bits, in two halves so that n = 128 (exp near FLT_MAX) does not overflow the exponent field.
inline __m256 scale_by_pow2(__m256 p, __m256 n) {
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  auto pow2 = [&](__m256i e) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
  };
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2(n1)), pow2(n2));
}

// Where x0 is beyond the range a clamped polynomial covers: 0 below `lo`, infinity above `hi`
// (scale_by_pow2 cannot reach them: exp(-inf) = 0 and exp(+inf) = inf, as libm).
inline __m256 saturate_tails(__m256 y, __m256 x0, float lo, float hi) {
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x0, _mm256_set1_ps(lo), _CMP_LT_OQ));
  return _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()),
                          _mm256_cmp_ps(x0, _mm256_set1_ps(hi), _CMP_GT_OQ));
}

// 2^x = 2^n * 2^f with n = round(x), |f| <= 0.5: the degree-6 polynomial of avx512::exp2 (~2
// ulp). Inputs are clamped to [-127, 128] (NaN passes: max/min return their second operand when
// either is NaN); below -127 gives 0, above 128 infinity.
inline __m256 exp2(__m256 x0) {
  const __m256 x =
      _mm256_min_ps(_mm256_set1_ps(128.0f), _mm256_max_ps(_mm256_set1_ps(-127.0f), x0));
  const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(x, n);
  // Taylor coefficients of 2^f = e^(f ln2): ln2^k / k!.
  __m256 p = _mm256_set1_ps(1.5403530393381609954e-4f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146428443423e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291076284771620e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504108664821579953e-2f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.24022650695910071233f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.69314718055994530942f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  return saturate_tails(scale_by_pow2(p, n), x0, -127.0f, 128.0f);
}

// exp(x) = 2^n * e^r with n = round(x log2 e), r = x - n ln2 in two parts: a degree-6
// polynomial for e^r (~2 ulp). Inputs are clamped to [-87.3, 88.72] (NaN passes); below -87.3
// gives 0, above 88.7228 (log FLT_MAX) infinity.
inline __m256 exp(__m256 x0) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(88.72f), _mm256_max_ps(_mm256_set1_ps(-87.3f), x0));
  const __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f));
  const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187045e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  return saturate_tails(scale_by_pow2(p, n), x0, -87.3f, 88.7228f);
}

inline __m256 sigmoid(__m256 x) {
  const __m256 e = exp(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

// erf(z) by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7), as avx512::erf.
inline __m256 erf(__m256 z) {
  const __m256 sign_bit = _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN));
  const __m256 az = _mm256_andnot_ps(sign_bit, z);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), az, one));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  p = _mm256_mul_ps(p, t);
  const __m256 e = exp(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), az), az));
  const __m256 r = _mm256_fnmadd_ps(p, e, one);
  return _mm256_or_ps(r, _mm256_and_ps(z, sign_bit));  // z's sign onto r (r >= 0)
}

// Exact-erf GELU: 0.5 x (1 + erf(x / sqrt 2)).
inline __m256 gelu(__m256 x) {
  const __m256 half_x = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
  const __m256 e = erf(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752440f)));
  return _mm256_fmadd_ps(half_x, e, half_x);
}

// A load/store mask of the first n lanes (n <= 0: none, n >= 8: all); the convolutions build
// their two half masks of a 16-lane vector from it.
inline __m256i first_lanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The sum and the max of the 8 lanes.
inline float reduce_add(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}
inline float reduce_max(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}

}  // namespace
}  // namespace cuvil::runtime::cpu::avx2
