// Inline AVX-512 transcendental functions shared by the kernels that call them in their inner
// loops (elementwise activations, softmax, fused attention). Include only in an AVX-512 file
// (`<kernel>_avx512.cc`), after its target_avx512_begin.h: the
// helpers sit in an unnamed namespace, so each such file compiles its own copy for AVX-512 and no
// copy is ever shared with (or chosen by the linker for) a file built for another instruction set.
#pragma once

// (GCC 12 does not define __AVX512F__ under a C++ target pragma: target_avx512_begin.h defines
// CUVIL_AVX512_FILE instead.)
#ifndef CUVIL_AVX512_FILE
#error "elementwise_math_avx512.h: include only after runtime/cpu/target_avx512_begin.h"
#endif
#include <immintrin.h>

#include <cstdint>

namespace cuvil::runtime::cpu::avx512 {
namespace {

// 2^x = 2^n * 2^f with n = round(x), |f| <= 0.5: a degree-6 polynomial for 2^f (~2 ulp).
// Inputs are clamped to [-151, 129], where scalef already gives 0 and infinity, so that -inf
// gives 0 and +inf infinity; the clamp's operand order lets NaN through (max/min return their
// second operand when either is NaN).
inline __m512 exp2(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(129.0f), _mm512_max_ps(_mm512_set1_ps(-151.0f), x));
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  // Taylor coefficients of 2^f = e^(f ln2): ln2^k / k!.
  __m512 p = _mm512_set1_ps(1.5403530393381609954e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443423e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284771620e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821579953e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24022650695910071233f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.69314718055994530942f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// exp(x) = 2^n * 2^f with n = round(x*log2 e): a degree-6 polynomial for e^r, r = f*ln2 computed
// in two parts for accuracy (~2 ulp). Inputs are clamped to [-104, 89], where scalef already
// gives 0 and infinity (exp(-inf) = 0, exp(+inf) = inf, as libm); NaN passes the clamp.
inline __m512 exp(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
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

inline __m512 sigmoid(__m512 x) {
  const __m512 e = exp(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

// erf(z) by Abramowitz & Stegun 7.1.26: 1 - t (a1 + t (a2 + ... a5)) e^(-z^2), t = 1/(1 + p|z|),
// sign restored; |error| <= 1.5e-7, and the e^(-z^2) factor shrinks it for large |z|.
inline __m512 erf(__m512 z) {
  const __m512 az = _mm512_abs_ps(z);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), az, one));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  p = _mm512_mul_ps(p, t);
  const __m512 e = exp(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), az), az));
  const __m512 r = _mm512_fnmadd_ps(p, e, one);
  // Copy z's sign onto r (r >= 0).
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(INT32_MIN));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign));
}

// Exact-erf GELU: 0.5 x (1 + erf(x / sqrt 2)).
inline __m512 gelu(__m512 x) {
  const __m512 half_x = _mm512_mul_ps(_mm512_set1_ps(0.5f), x);
  const __m512 e = erf(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752440f)));
  return _mm512_fmadd_ps(half_x, e, half_x);
}

// A mask of the first n (0..16) lanes.
inline __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

}  // namespace
}  // namespace cuvil::runtime::cpu::avx512
