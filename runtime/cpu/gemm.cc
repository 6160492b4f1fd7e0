#include "runtime/cpu/gemm.h"

#include <algorithm>
#include <cstring>

#include "passes/ir/error.h"
#include "runtime/thread_pool.h"

#ifdef __AVX512F__
// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register and warn about it
// where they are inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace cuvil::runtime::cpu {

namespace {

constexpr int MR = kGemmMR;
constexpr int NR = kGemmNR;

// C[MR, NR] (+)= sum_p a[p*MR + i] * b[p*NR + j]. Plain C++; the reference for the vector one.
void micro_portable(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                    bool accumulate) {
  float acc[MR][NR] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < MR; ++i) {
      const float ai = a[p * MR + i];
      for (int j = 0; j < NR; ++j) acc[i][j] += ai * b[p * NR + j];
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + acc[i][j];
  }
}

#ifdef __AVX512F__
static_assert(NR == 32, "the AVX-512 micro-kernel holds two 16-float vectors per row");
// 12 x 32 tile: 24 accumulators in zmm registers, two B vectors, A broadcast from memory.
void micro_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                  bool accumulate) {
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
    _mm_prefetch(reinterpret_cast<const char*>(b + 8 * NR), _MM_HINT_T0);
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
    }
    a += MR;
    b += NR;
  }
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    float* row = c + i * ldc;
    if (accumulate) {
      c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(row));
      c1[i] = _mm512_add_ps(c1[i], _mm512_loadu_ps(row + 16));
    }
    _mm512_storeu_ps(row, c0[i]);
    _mm512_storeu_ps(row + 16, c1[i]);
  }
}
#endif

using MicroKernel = void (*)(int64_t, const float*, const float*, float*, int64_t, bool);

MicroKernel pick_micro(bool portable) {
#ifdef __AVX512F__
  if (!portable) return micro_avx512;
#endif
  (void)portable;
  return micro_portable;
}

// Packs A[rows, cols] (row stride lda) into MR-row slivers: dst[s][p][i], zero-padded rows.
void pack_a(const float* a, int64_t lda, int64_t rows, int64_t cols, float* dst) {
  for (int64_t r0 = 0; r0 < rows; r0 += MR) {
    const int64_t mr = std::min<int64_t>(MR, rows - r0);
    float* d = dst + r0 * cols;
    if (mr == MR) {
      for (int64_t p = 0; p < cols; ++p) {
        for (int i = 0; i < MR; ++i) d[p * MR + i] = a[(r0 + i) * lda + p];
      }
    } else {
      for (int64_t p = 0; p < cols; ++p) {
        for (int i = 0; i < MR; ++i) d[p * MR + i] = i < mr ? a[(r0 + i) * lda + p] : 0.0f;
      }
    }
  }
}

// Packs B[rows=k, cols=n] into NR-column slivers dst[s][p][j], zero-padded columns. With
// `transposed` the source is B^T stored [n, k] with row stride ldb.
void pack_b(const float* b, int64_t ldb, bool transposed, int64_t rows, int64_t cols, float* dst) {
  for (int64_t j0 = 0; j0 < cols; j0 += NR) {
    const int64_t nr = std::min<int64_t>(NR, cols - j0);
    float* d = dst + j0 * rows;
    if (!transposed) {
      for (int64_t p = 0; p < rows; ++p) {
        const float* src = b + p * ldb + j0;
        float* dp = d + p * NR;
        std::memcpy(dp, src, static_cast<size_t>(nr) * sizeof(float));
        for (int64_t j = nr; j < NR; ++j) dp[j] = 0.0f;
      }
    } else {
      for (int64_t j = 0; j < nr; ++j) {
        const float* src = b + (j0 + j) * ldb;
        for (int64_t p = 0; p < rows; ++p) d[p * NR + j] = src[p];
      }
      for (int64_t j = nr; j < NR; ++j) {
        for (int64_t p = 0; p < rows; ++p) d[p * NR + j] = 0.0f;
      }
    }
  }
}

int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

// Few rows of A (decode, batch-1 linear layers): the product is bound by streaming B once, so
// B is read in place, without packing. Computes columns [j0, j1) of every row, then finishes
// them (bias, epilogue).
void skinny(const GemmProblem& g, int64_t j0, int64_t j1) {
  constexpr int64_t kCols = 256;  // columns per block: a block of C rows stays in L1
  for (int64_t jb = j0; jb < j1; jb += kCols) {
    const int64_t je = std::min(j1, jb + kCols);
    for (int64_t i = 0; i < g.m; ++i) {
      const float* a = g.a + i * g.lda;
      float* c = g.c + i * g.ldc;
      if (g.b_transposed) {
        for (int64_t j = jb; j < je; ++j) {
          const float* b = g.b + j * g.ldb;
          float acc[16] = {};
          int64_t p = 0;
          for (; p + 16 <= g.k; p += 16) {
            for (int l = 0; l < 16; ++l) acc[l] += a[p + l] * b[p + l];
          }
          float sum = 0;
          for (; p < g.k; ++p) sum += a[p] * b[p];
          for (int l = 0; l < 16; ++l) sum += acc[l];
          c[j] = sum;
        }
      } else {
        for (int64_t j = jb; j < je; ++j) c[j] = 0.0f;
        for (int64_t p = 0; p < g.k; ++p) {
          const float av = a[p];
          const float* b = g.b + p * g.ldb;
          for (int64_t j = jb; j < je; ++j) c[j] += av * b[j];
        }
      }
      if (g.bias) {
        for (int64_t j = jb; j < je; ++j) c[j] += g.bias_per_row ? g.bias[i] : g.bias[j];
      }
      if (g.epilogue) g.epilogue->apply(c + jb, je - jb);
    }
  }
}

constexpr int64_t kSkinnyRows = 4;

}  // namespace

void gemm_serial(const GemmProblem& g, ThreadPool& pool, int tid) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.m <= kSkinnyRows && !g.blocking.portable) {
    skinny(g, 0, g.n);
    return;
  }
  const MicroKernel micro = pick_micro(g.blocking.portable);
  const int64_t mc_max = round_up(std::max<int64_t>(1, g.blocking.mc), MR);
  const int64_t kc_max = std::max<int64_t>(1, g.blocking.kc);
  const int64_t nc_max = round_up(std::max<int64_t>(1, g.blocking.nc), NR);
  const int64_t kc_cap = std::min(kc_max, std::max<int64_t>(g.k, 1));
  float* ap = pool.scratch(tid, ThreadPool::kPackA,
                           static_cast<size_t>(std::min(mc_max, round_up(g.m, MR)) * kc_cap));
  float* bp = pool.scratch(tid, ThreadPool::kPackB,
                           static_cast<size_t>(std::min(nc_max, round_up(g.n, NR)) * kc_cap));
  float* tile = pool.scratch(tid, ThreadPool::kTile, MR * NR);

  for (int64_t jc = 0; jc < g.n; jc += nc_max) {
    const int64_t nc = std::min(nc_max, g.n - jc);
    for (int64_t pc = 0; pc < g.k || pc == 0; pc += kc_max) {
      const int64_t kc = std::min(kc_max, g.k - pc);
      const bool first = pc == 0;
      const bool last = pc + kc >= g.k;
      if (g.b_transposed) {
        pack_b(g.b + jc * g.ldb + pc, g.ldb, true, kc, nc, bp);
      } else {
        pack_b(g.b + pc * g.ldb + jc, g.ldb, false, kc, nc, bp);
      }
      for (int64_t ic = 0; ic < g.m; ic += mc_max) {
        const int64_t mc = std::min(mc_max, g.m - ic);
        pack_a(g.a + ic * g.lda + pc, g.lda, mc, kc, ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int64_t nr = std::min<int64_t>(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t mr = std::min<int64_t>(MR, mc - ir);
            float* c = g.c + (ic + ir) * g.ldc + jc + jr;
            if (mr == MR && nr == NR) {
              micro(kc, ap + ir * kc, bp + jr * kc, c, g.ldc, !first);
            } else {
              // Edge tile: compute the whole register tile aside, keep the valid part.
              micro(kc, ap + ir * kc, bp + jr * kc, tile, NR, false);
              for (int64_t i = 0; i < mr; ++i) {
                for (int64_t j = 0; j < nr; ++j) {
                  c[i * g.ldc + j] = (first ? 0.0f : c[i * g.ldc + j]) + tile[i * NR + j];
                }
              }
            }
          }
        }
        if (last && (g.bias || g.epilogue)) {
          // Finish this mc x nc block while it is in cache.
          for (int64_t i = 0; i < mc; ++i) {
            float* row = g.c + (ic + i) * g.ldc + jc;
            if (g.bias) {
              if (g.bias_per_row) {
                const float bv = g.bias[ic + i];
                for (int64_t j = 0; j < nc; ++j) row[j] += bv;
              } else {
                const float* bv = g.bias + jc;
                for (int64_t j = 0; j < nc; ++j) row[j] += bv[j];
              }
            }
            if (g.epilogue) g.epilogue->apply(row, nc);
          }
        }
      }
      if (g.k == 0) break;
    }
  }
}

void gemm(const GemmProblem& g, ThreadPool& pool) {
  const int threads = pool.threads();
  if (g.m <= kSkinnyRows && g.m > 0 && !g.blocking.portable) {
    pool.parallel_for((g.n + 63) / 64,
                      [&](int64_t b0, int64_t b1) { skinny(g, b0 * 64, std::min(g.n, b1 * 64)); });
    return;
  }
  const int64_t tiles_m = (g.m + MR - 1) / MR;
  const int64_t tiles_n = (g.n + NR - 1) / NR;
  const double work =
      static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  if (threads == 1 || work < 32.0 * 32 * 64 || (tiles_m < 2 && tiles_n < 2)) {
    gemm_serial(g, pool, pool.current_thread());
    return;
  }
  // One strip of C per thread, cut along N (each thread packs only its B columns) unless N is
  // too narrow to give every thread a few register tiles.
  const bool split_n = tiles_n >= 4 * threads || tiles_n >= tiles_m;
  const int64_t tiles = split_n ? tiles_n : tiles_m;
  const int64_t parts = std::min<int64_t>(threads, tiles);
  pool.parallel_for_tid(parts, [&](int tid, int64_t p0, int64_t p1) {
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t t0 = tiles * part / parts, t1 = tiles * (part + 1) / parts;
      GemmProblem sub = g;
      if (split_n) {
        const int64_t j0 = t0 * NR, j1 = std::min(g.n, t1 * NR);
        sub.n = j1 - j0;
        sub.b = g.b_transposed ? g.b + j0 * g.ldb : g.b + j0;
        sub.c = g.c + j0;
        if (g.bias && !g.bias_per_row) sub.bias = g.bias + j0;
      } else {
        const int64_t i0 = t0 * MR, i1 = std::min(g.m, t1 * MR);
        sub.m = i1 - i0;
        sub.a = g.a + i0 * g.lda;
        sub.c = g.c + i0 * g.ldc;
        if (g.bias && g.bias_per_row) sub.bias = g.bias + i0;
      }
      gemm_serial(sub, pool, tid);
    }
  });
}

}  // namespace cuvil::runtime::cpu
