// AVX2 few-row product against a transposed B; compiled for AVX2 by the pragma below.
#include <cstdint>

#include "runtime/cpu/gemv.h"

#include "runtime/cpu/target_avx2_begin.h"

namespace cuvil::runtime::cpu {

namespace {

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// R rows of B at once (R independent streams), M rows of A: M*R accumulators.
template <int M, int R>
void rows_block(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                int64_t ldc, int64_t j) {
  __m256 acc[M][R];
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[i][r] = _mm256_setzero_ps();
  }
  const float* bj = b + j * ldb;
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    __m256 bv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) bv[r] = _mm256_loadu_ps(bj + r * ldb + p);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      const __m256 av = _mm256_loadu_ps(a + i * lda + p);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[i][r] = _mm256_fmadd_ps(av, bv[r], acc[i][r]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float sum = hsum(acc[i][r]);
      for (int64_t q = p; q < k; ++q) sum += a[i * lda + q] * bj[r * ldb + q];
      c[i * ldc + j + r] = sum;
    }
  }
}

template <int M>
void gemv_rows(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
               int64_t ldc, int64_t j0, int64_t j1) {
  constexpr int R = M <= 2 ? 4 : 2;  // M*R + R + 1 <= 16 registers
  int64_t j = j0;
  for (; j + R <= j1; j += R) rows_block<M, R>(k, a, lda, b, ldb, c, ldc, j);
  for (; j < j1; ++j) rows_block<M, 1>(k, a, lda, b, ldb, c, ldc, j);
}

}  // namespace

void gemv_bt_avx2(int64_t m, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                  float* c, int64_t ldc, int64_t j0, int64_t j1) {
  // Rows of A in groups of up to four (callers pass m <= kGemvMaxRows; more still works).
  for (int64_t i = 0; i < m; i += 4) {
    const float* ai = a + i * lda;
    float* ci = c + i * ldc;
    switch (m - i) {
      case 1:
        gemv_rows<1>(k, ai, lda, b, ldb, ci, ldc, j0, j1);
        break;
      case 2:
        gemv_rows<2>(k, ai, lda, b, ldb, ci, ldc, j0, j1);
        break;
      case 3:
        gemv_rows<3>(k, ai, lda, b, ldb, ci, ldc, j0, j1);
        break;
      default:
        gemv_rows<4>(k, ai, lda, b, ldb, ci, ldc, j0, j1);
        break;
    }
  }
}

}  // namespace cuvil::runtime::cpu

#include "runtime/cpu/target_end.h"
