// fp32 -> bf16 rounding of a run of floats, 16 lanes at a time, for the bf16 kernels (flash
// attention's Q and P rows, the direct convolution's bordered input copy, the skinny GEMM's A
// rows). Compiled for AVX512_BF16 whatever -march says; called only after cpu_has_avx512_bf16().
// Include, as elementwise_math_avx512.h, after target_avx512_begin.h: it uses that header's lane
// masks.
#pragma once

#ifndef CUVIL_AVX512_FILE
#error "bf16_round_avx512.h: include only after runtime/cpu/target_avx512_begin.h"
#endif
#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/elementwise_math_avx512.h"
#include "runtime/cpu/target_attributes.h"

namespace cuvil::runtime::cpu {

// dst[0, n) = bf16(scale * x[0, n)), rounded to nearest even (VCVTNEPS2BF16). A scale of 1 is
// exact: the result is bf16(x).
CUVIL_BF16_TARGET inline void round_to_bf16(const float* x, int64_t n, uint16_t* dst,
                                            float scale = 1.0f) {
  const __m512 s = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = avx512::first_lanes(n - i);
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_mul_ps(s, _mm512_maskz_loadu_ps(k, x + i)));
    _mm256_mask_storeu_epi16(dst + i, k, reinterpret_cast<const __m256i&>(h));
  }
}

}  // namespace cuvil::runtime::cpu
