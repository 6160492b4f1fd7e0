// AVX2 micro-kernels of flash attention (the portable ones are in attention_flash.cc, the AVX-512
// ones in attention_flash_avx512.cc). This file alone is compiled for AVX2 and FMA (the target
// pragma below) and runs only when sdpa_flash_isa() is avx2; headers come before the pragma, so
// that no inline code of theirs is compiled for it. With 16 vector registers of 8 floats, the
// tiles are narrower than AVX-512's: Q K^T takes a 32-key panel in two halves of 16 keys, and
// P V covers 16 output columns per tile.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/cpu/attention_flash_kernels.h"
#include "runtime/cpu/register_rows.h"

#include "runtime/cpu/target_avx2_begin.h"

#include "runtime/cpu/elementwise_math_avx2.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int64_t kPanel = kFlashPanel;
constexpr int kLanes = 8;
constexpr int kQkTileRows = 6;  // 6 rows x 2 vectors: 12 accumulators, 2 keys, 1 broadcast
constexpr int kPvRows = 6;      // 6 rows x 2 vectors of output columns, likewise
constexpr int kPvVectors = 2;
constexpr int64_t kPvCols = kLanes * kPvVectors;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// s[r][0:16] = sum_t q[r*d + t] * kp[t][0:16] for R rows (kp: a half panel, row stride kPanel).
template <int R>
void qk_tile(const float* q, int64_t d, const float* kp, float* s, int64_t lds) {
  __m256 c0[R], c1[R];
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm256_setzero_ps();
  for (int64_t t = 0; t < d; ++t) {
    const __m256 b0 = _mm256_loadu_ps(kp + t * kPanel);
    const __m256 b1 = _mm256_loadu_ps(kp + t * kPanel + kLanes);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(q + r * d + t);
      c0[r] = _mm256_fmadd_ps(a, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(a, b1, c1[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(s + r * lds, c0[r]);
    _mm256_storeu_ps(s + r * lds + kLanes, c1[r]);
  }
}

// s[r][0:32] = sum_t q[r*d + t] * kp[t][0:32] for rows <= kFlashQkRows rows: tiles of up to 6 rows,
// each over the panel's two halves.
void qk_rows(int rows, const float* q, int64_t d, const float* kp, float* s, int64_t lds) {
  for (int r = 0; r < rows; r += kQkTileRows) {
    const int nr = std::min(kQkTileRows, rows - r);
    for (int64_t half = 0; half < kPanel; half += 2 * kLanes) {
      with_rows<kQkTileRows>(nr, [&](auto rr) {
        qk_tile<decltype(rr)::value>(q + r * d, d, kp + half, s + r * lds + half, lds);
      });
    }
  }
}

// o[r][cols] = alpha[r] * o[r][cols] + sum_j p[r][j] v[j][cols] over C vectors of columns starting
// at v/o; the last vector is masked by `last`.
template <int R, int C>
void pv_tile(const float* p, int64_t ldp, int64_t n, const float* v, int64_t ldv,
             const float* alpha, float* o, int64_t ldo, __m256i last) {
  const __m256i all = _mm256_set1_epi32(-1);
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r) {
    const __m256 al = _mm256_set1_ps(alpha[r]);
    for (int c = 0; c < C; ++c) {
      const __m256i m = c == C - 1 ? last : all;
      acc[r][c] = _mm256_mul_ps(al, _mm256_maskload_ps(o + r * ldo + kLanes * c, m));
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    __m256 b[C];
    for (int c = 0; c < C; ++c) {
      const __m256i m = c == C - 1 ? last : all;
      b[c] = _mm256_maskload_ps(v + j * ldv + kLanes * c, m);
    }
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(p + r * ldp + j);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      const __m256i m = c == C - 1 ? last : all;
      _mm256_maskstore_ps(o + r * ldo + kLanes * c, m, acc[r][c]);
    }
  }
}

template <int C>
void pv_rows(int rows, const float* p, int64_t ldp, int64_t n, const float* v, int64_t ldv,
             const float* alpha, float* o, int64_t ldo, __m256i last) {
  with_rows<kPvRows>(rows, [&](auto r) {
    pv_tile<decltype(r)::value, C>(p, ldp, n, v, ldv, alpha, o, ldo, last);
  });
}

// P = 2^(S - m_new) over the `valid` first entries, 0 over [valid, n); updates m and l and
// returns the accumulator's rescale factor 2^(m_old - m_new).
float online_softmax_row(float* s, int64_t valid, int64_t n, float& m, float& l) {
  const __m256 neg_inf = _mm256_set1_ps(kNegInf);
  __m256 vmax = neg_inf;
  for (int64_t j = 0; j < valid; j += kLanes) {
    const __m256i k = avx2::first_lanes(valid - j);
    const __m256 x = _mm256_maskload_ps(s + j, k);
    vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(neg_inf, x, _mm256_castsi256_ps(k)));
  }
  const float m_new = std::max(m, avx2::reduce_max(vmax));
  const float alpha = m == kNegInf ? 0.0f : std::exp2(m - m_new);
  // Every score so far -inf (a masked block): 2^(-inf - 0) = 0, not 2^(-inf + inf) = NaN.
  const __m256 vm = _mm256_set1_ps(m_new == kNegInf ? 0.0f : m_new);
  __m256 sum = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; j += kLanes) {
    const __m256i k = avx2::first_lanes(valid - j);
    const __m256i in_row = avx2::first_lanes(n - j);
    const __m256 e = _mm256_and_ps(avx2::exp2(_mm256_sub_ps(_mm256_maskload_ps(s + j, k), vm)),
                                   _mm256_castsi256_ps(k));
    _mm256_maskstore_ps(s + j, in_row, e);
    sum = _mm256_add_ps(sum, e);
  }
  l = l * alpha + avx2::reduce_add(sum);
  m = m_new;
  return alpha;
}

// O[rows, dv] = alpha * O + P[rows, n] V[n, dv].
void pv_block(int64_t rows, const float* p, int64_t ldp, int64_t n, const float* v, int64_t dv,
              const float* alpha, float* o) {
  for (int64_t c0 = 0; c0 < dv; c0 += kPvCols) {
    const int64_t cols = std::min(kPvCols, dv - c0);
    const int vectors = static_cast<int>((cols + kLanes - 1) / kLanes);
    const __m256i last = avx2::first_lanes(cols - kLanes * (vectors - 1));
    for (int64_t r = 0; r < rows; r += kPvRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kPvRows, rows - r));
      const float* pr = p + r * ldp;
      float* orow = o + r * dv + c0;
      if (vectors == 1) {
        pv_rows<1>(nr, pr, ldp, n, v + c0, dv, alpha + r, orow, dv, last);
      } else {
        pv_rows<2>(nr, pr, ldp, n, v + c0, dv, alpha + r, orow, dv, last);
      }
    }
  }
}

constexpr FlashKernels kAvx2{qk_rows, online_softmax_row, pv_block};

}  // namespace

const FlashKernels& flash_kernels_avx2() {
  return kAvx2;
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
