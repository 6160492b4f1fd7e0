// AVX-512 loops of dynamic activation quantisation (quantize_avx512.h). The int8 kernels run them
// on every activation tensor before the product: as scalar loops they took more of ResNet-50's
// int8 run than the VNNI GEMM did.
#include <cstdint>

#include "runtime/cpu/quantize_avx512.h"

#include "runtime/cpu/target_avx512_begin.h"

namespace cuvil::runtime::cpu {

namespace {

inline __mmask16 tail_mask(int64_t left) {
  return static_cast<__mmask16>((1u << left) - 1u);
}

}  // namespace

void activation_range_avx512(const float* x, int64_t n, float* lo, float* hi) {
  // Four accumulators each, so the min and max chains do not bound the loop. VMINPS returns its
  // second operand where either is NaN: the accumulator, so NaNs are skipped as the portable loop
  // skips them. Masked-off lanes load 0, which the range always includes.
  __m512 mn[4], mx[4];
  for (int j = 0; j < 4; ++j) mn[j] = mx[j] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int j = 0; j < 4; ++j) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * j);
      mn[j] = _mm512_min_ps(v, mn[j]);
      mx[j] = _mm512_max_ps(v, mx[j]);
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    mn[0] = _mm512_min_ps(v, mn[0]);
    mx[0] = _mm512_max_ps(v, mx[0]);
  }
  *lo =
      _mm512_reduce_min_ps(_mm512_min_ps(_mm512_min_ps(mn[0], mn[1]), _mm512_min_ps(mn[2], mn[3])));
  *hi =
      _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3])));
}

namespace {

// 16 values quantised, one u8 value (0..255) per int32 lane.
inline __m512i quantize16(__m512 v, __m512 inv, __m512 zp) {
  const __m512 r =
      _mm512_roundscale_ps(_mm512_mul_ps(v, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // VMAXPS returns 0 (its second operand) for a NaN, as the portable loop does.
  const __m512 c = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(r, zp), _mm512_setzero_ps()),
                                 _mm512_set1_ps(255.0f));
  return _mm512_cvtps_epi32(c);
}

}  // namespace

void quantize_u8_avx512(const float* x, int64_t n, float inv, float zero_point, uint8_t* dst) {
  const __m512 vinv = _mm512_set1_ps(inv), vzp = _mm512_set1_ps(zero_point);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    // Four vectors of int32 narrowed to one of bytes: one 64-byte store.
    const __m128i b0 = _mm512_cvtepi32_epi8(quantize16(_mm512_loadu_ps(x + i), vinv, vzp));
    const __m128i b1 = _mm512_cvtepi32_epi8(quantize16(_mm512_loadu_ps(x + i + 16), vinv, vzp));
    const __m128i b2 = _mm512_cvtepi32_epi8(quantize16(_mm512_loadu_ps(x + i + 32), vinv, vzp));
    const __m128i b3 = _mm512_cvtepi32_epi8(quantize16(_mm512_loadu_ps(x + i + 48), vinv, vzp));
    const __m512i bytes = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(b0), b1, 1)),
        _mm256_inserti128_si256(_mm256_castsi128_si256(b2), b3, 1), 1);
    _mm512_storeu_si512(dst + i, bytes);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    _mm512_mask_cvtepi32_storeu_epi8(dst + i, m,
                                     quantize16(_mm512_maskz_loadu_ps(m, x + i), vinv, vzp));
  }
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
