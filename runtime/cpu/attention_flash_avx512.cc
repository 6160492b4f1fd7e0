// AVX-512 micro-kernels of flash attention (the portable ones are in attention_flash.cc). This
// file alone is compiled for AVX-512 (the target pragma below) and runs only when
// sdpa_flash_isa() is avx512; headers come before the pragma, so that no inline code of theirs
// is compiled for it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/cpu/attention_flash_kernels.h"
#include "runtime/cpu/attention_flash_tiles.h"
#include "runtime/cpu/register_rows.h"

#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/elementwise_math_avx512.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int64_t kPanel = kFlashPanel;
constexpr int kPvRows = 6;     // rows per P V register tile
constexpr int kPvVectors = 4;  // 16-float vectors of output columns per P V tile
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// s[r][0:32] = sum_t q[r*d + t] * kp[t][0:32] for R rows.
template <int R>
void qk_tile(const float* q, int64_t d, const float* kp, float* s, int64_t lds) {
  __m512 c0[R], c1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
  for (int64_t t = 0; t < d; ++t) {
    const __m512 b0 = _mm512_loadu_ps(kp + t * kPanel);
    const __m512 b1 = _mm512_loadu_ps(kp + t * kPanel + 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(q[r * d + t]);
      c0[r] = _mm512_fmadd_ps(a, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(a, b1, c1[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(s + r * lds, c0[r]);
    _mm512_storeu_ps(s + r * lds + 16, c1[r]);
  }
}

// o[r][cols] = alpha[r] * o[r][cols] + sum_j p[r][j] v[j][cols] over C vectors of columns starting
// at v/o; the last vector is masked by `last`.
template <int R, int C>
void pv_tile(const float* p, int64_t ldp, int64_t n, const float* v, int64_t ldv,
             const float* alpha, float* o, int64_t ldo, __mmask16 last) {
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
  for (int64_t j = 0; j < n; ++j) {
    __m512 b[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const __mmask16 m = c == C - 1 ? last : static_cast<__mmask16>(0xffff);
      b[c] = _mm512_maskz_loadu_ps(m, v + j * ldv + 16 * c);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(p[r * ldp + j]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
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
void pv_rows(int rows, const float* p, int64_t ldp, int64_t n, const float* v, int64_t ldv,
             const float* alpha, float* o, int64_t ldo, __mmask16 last) {
  with_rows<kPvRows>(rows, [&](auto r) {
    pv_tile<decltype(r)::value, C>(p, ldp, n, v, ldv, alpha, o, ldo, last);
  });
}

void qk_rows(int rows, const float* q, int64_t d, const float* kp, float* s, int64_t lds) {
  with_rows<kFlashQkRows>(rows, [&](auto r) { qk_tile<decltype(r)::value>(q, d, kp, s, lds); });
}

// P = 2^(S - m_new) over the `valid` first entries, 0 over [valid, n); updates m and l and
// returns the accumulator's rescale factor 2^(m_old - m_new).
float online_softmax_row(float* s, int64_t valid, int64_t n, float& m, float& l) {
  __m512 vmax = _mm512_set1_ps(kNegInf);
  for (int64_t j = 0; j < valid; j += 16) {
    const __mmask16 k = avx512::first_lanes(valid - j);
    vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(_mm512_set1_ps(kNegInf), k, s + j));
  }
  const float m_new = std::max(m, _mm512_reduce_max_ps(vmax));
  const float alpha = m == kNegInf ? 0.0f : std::exp2(m - m_new);
  // Every score so far -inf (a masked block): 2^(-inf - 0) = 0, not 2^(-inf + inf) = NaN.
  const __m512 vm = _mm512_set1_ps(m_new == kNegInf ? 0.0f : m_new);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = avx512::first_lanes(valid - j > 0 ? valid - j : 0);
    const __mmask16 all = avx512::first_lanes(n - j);
    const __m512 e =
        _mm512_maskz_mov_ps(k, avx512::exp2(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), vm)));
    _mm512_mask_storeu_ps(s + j, all, e);
    sum = _mm512_add_ps(sum, e);
  }
  l = l * alpha + _mm512_reduce_add_ps(sum);
  m = m_new;
  return alpha;
}

// O[rows, dv] = alpha * O + P[rows, n] V[n, dv].
void pv_block(int64_t rows, const float* p, int64_t ldp, int64_t n, const float* v, int64_t dv,
              const float* alpha, float* o) {
  for_each_pv_tile<kPvRows, kPvVectors>(
      rows, dv, [&](auto vectors, int nr, int64_t r, int64_t c0, __mmask16 last) {
        pv_rows<decltype(vectors)::value>(nr, p + r * ldp, ldp, n, v + c0, dv, alpha + r,
                                          o + r * dv + c0, dv, last);
      });
}

constexpr FlashKernels kAvx512{qk_rows, online_softmax_row, pv_block};

}  // namespace

const FlashKernels& flash_kernels_avx512() {
  return kAvx512;
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
