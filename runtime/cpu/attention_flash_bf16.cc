// The bf16 products of flash attention (sdpa.flash_bf16, driven by attention_flash.cc): Q K^T and
// P V on VDPBF16PS with fp32 accumulators. Compiled for AVX512_BF16 whatever -march says; only
// called after cpu_has_avx512_bf16().
#include <algorithm>
#include <cstdint>

#include "runtime/cpu/attention_flash_kernels.h"
#include "runtime/cpu/attention_flash_tiles.h"
#include "runtime/cpu/register_rows.h"
#include "runtime/cpu/target_attributes.h"

// Lane masks compiled for AVX-512, inlined into the bf16 code only.
#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/bf16_round_avx512.h"
#include "runtime/cpu/elementwise_math_avx512.h"

#include "runtime/cpu/target_end.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int64_t kPanel = kFlashPanel;
constexpr int kPvRows = 6;     // rows per P V register tile
constexpr int kPvVectors = 4;  // 16-float vectors of output columns per P V tile

// Compiled for the bf16 target too: a 64-byte vector passed by value outside it changes the ABI.
CUVIL_BF16_TARGET inline __m512bh as_bh(__m512i v) {
  return reinterpret_cast<__m512bh&>(v);
}

// s[r][0:32] = sum over dp pairs of q[r] . kp for R rows.
template <int R>
CUVIL_BF16_TARGET void qk_tile(const uint32_t* q, int64_t dp, const uint32_t* kp, float* s,
                               int64_t lds) {
  __m512 c0[R], c1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
  for (int64_t t = 0; t < dp; ++t) {
    const __m512bh b0 = as_bh(_mm512_loadu_si512(kp + t * kPanel));
    const __m512bh b1 = as_bh(_mm512_loadu_si512(kp + t * kPanel + 16));
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512bh a = as_bh(_mm512_set1_epi32(static_cast<int>(q[r * dp + t])));
      c0[r] = _mm512_dpbf16_ps(c0[r], a, b0);
      c1[r] = _mm512_dpbf16_ps(c1[r], a, b1);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(s + r * lds, c0[r]);
    _mm512_storeu_ps(s + r * lds + 16, c1[r]);
  }
}

void qk_rows(int rows, const uint32_t* q, int64_t dp, const uint32_t* kp, float* s, int64_t lds) {
  with_rows<kFlashQkRows>(rows, [&](auto r) { qk_tile<decltype(r)::value>(q, dp, kp, s, lds); });
}

CUVIL_BF16_TARGET void round_row(const float* x, int64_t n, float scale, uint16_t* dst) {
  round_to_bf16(x, n, dst, scale);
  if (n % 2 != 0) dst[n] = 0;
}

// o[r][cols] = alpha[r] * o[r][cols] + sum over np key pairs of p[r] . v, over C vectors of
// columns starting at v/o; the last vector is masked by `last`.
template <int R, int C>
CUVIL_BF16_TARGET void pv_tile(const uint32_t* p, int64_t ldp, int64_t np, const uint32_t* v,
                               int64_t ldv, const float* alpha, float* o, int64_t ldo,
                               __mmask16 last) {
  __m512 acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    const __m512 al = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const __mmask16 m = c == C - 1 ? last : static_cast<__mmask16>(0xffff);
      acc[r][c] = _mm512_mul_ps(al, _mm512_maskz_loadu_ps(m, o + r * ldo + 16 * c));
    }
  }
  for (int64_t j = 0; j < np; ++j) {
    __m512bh b[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const __mmask16 m = c == C - 1 ? last : static_cast<__mmask16>(0xffff);
      b[c] = as_bh(_mm512_maskz_loadu_epi32(m, v + j * ldv + 16 * c));
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512bh a = as_bh(_mm512_set1_epi32(static_cast<int>(p[r * ldp + j])));
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], a, b[c]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const __mmask16 m = c == C - 1 ? last : static_cast<__mmask16>(0xffff);
      _mm512_mask_storeu_ps(o + r * ldo + 16 * c, m, acc[r][c]);
    }
  }
}

template <int C>
void pv_rows(int rows, const uint32_t* p, int64_t ldp, int64_t np, const uint32_t* v, int64_t ldv,
             const float* alpha, float* o, int64_t ldo, __mmask16 last) {
  with_rows<kPvRows>(rows, [&](auto r) {
    pv_tile<decltype(r)::value, C>(p, ldp, np, v, ldv, alpha, o, ldo, last);
  });
}

void pv_block(int64_t rows, const uint32_t* p, int64_t ldp, int64_t np, const uint32_t* v,
              int64_t dv, const float* alpha, float* o) {
  for_each_pv_tile<kPvRows, kPvVectors>(
      rows, dv, [&](auto vectors, int nr, int64_t r, int64_t c0, __mmask16 last) {
        pv_rows<decltype(vectors)::value>(nr, p + r * ldp, ldp, np, v + c0, dv, alpha + r,
                                          o + r * dv + c0, dv, last);
      });
}

constexpr FlashBf16Kernels kBf16{qk_rows, round_row, pv_block};

}  // namespace

const FlashBf16Kernels& flash_kernels_bf16() {
  return kBf16;
}

}  // namespace cuvil::runtime::cpu
