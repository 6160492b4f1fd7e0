// Inline AVX-512 transcendental functions shared by the kernels that call them in their inner
// loops (elementwise activations, softmax, fused attention). Include only where __AVX512F__ is
// defined.
#pragma once

#ifdef __AVX512F__
// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register and warn about it
// where they are inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace cuvil::runtime::cpu::avx512 {

// 2^x = 2^n * 2^f with n = round(x), |f| <= 0.5: a degree-6 polynomial for 2^f (~2 ulp).
// Inputs below -126 give 0 or a denormal, inputs above 127 are clamped.
inline __m512 exp2(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
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
// in two parts for accuracy (~2 ulp).
inline __m512 exp(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
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

// A mask of the first n (0..16) lanes.
inline __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

}  // namespace cuvil::runtime::cpu::avx512

#endif  // __AVX512F__
