#include "runtime/cpu/gemm_bf16.h"

#include <algorithm>

#include "base/error.h"
#include "runtime/cpu/lowp_gemm_partition.h"
#include "runtime/thread_pool.h"

// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register and warn about it
// where they are inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "runtime/cpu/amx_tiles.h"
#include "runtime/cpu/kernel_util.h"

// Compiled for AVX512_BF16 whatever -march says; only called after cpu_has_avx512_bf16().
#define CUVIL_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define CUVIL_AMX_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))

namespace cuvil::runtime::cpu {

namespace {

constexpr int MR = kBf16MR;
constexpr int NR = kBf16NR;
static_assert(NR == 32, "a sliver row of K pairs is two 16-lane vectors");

// Compiled for the bf16 target too: a 64-byte vector passed by value outside it changes the ABI.
CUVIL_BF16_TARGET inline __m512bh as_bh(__m512i v) {
  return reinterpret_cast<__m512bh&>(v);
}

// C[MR, NR] (+)= A-sliver x B-sliver over kp K pairs; fp32 accumulators.
CUVIL_BF16_TARGET void micro(int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                             int64_t ldc, bool accumulate) {
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kp; ++p) {
    const __m512bh b0 = as_bh(_mm512_loadu_si512(b));
    const __m512bh b1 = as_bh(_mm512_loadu_si512(b + 16));
    _mm_prefetch(reinterpret_cast<const char*>(b + 8 * NR), _MM_HINT_T0);
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const __m512bh ai = as_bh(_mm512_set1_epi32(static_cast<int>(a[i])));
      c0[i] = _mm512_dpbf16_ps(c0[i], ai, b0);
      c1[i] = _mm512_dpbf16_ps(c1[i], ai, b1);
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

// Converts rows [0, rows) x columns [k0, k1) of fp32 A into MR-row slivers of K pairs:
// dst[sliver][p][i] (kp pairs per sliver, zero-padded rows and odd tail).
CUVIL_BF16_TARGET void pack_a(const float* a, int64_t lda, int64_t rows, int64_t k0, int64_t k1,
                              int64_t kp, uint32_t* dst) {
  const int64_t len = k1 - k0;
  const __m512i lane_offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(MR));
  for (int64_t r0 = 0; r0 < rows; r0 += MR) {
    const int64_t mr = std::min<int64_t>(MR, rows - r0);
    uint32_t* d = dst + r0 * kp;
    for (int64_t i = 0; i < MR; ++i) {
      if (i >= mr) {
        for (int64_t p = 0; p < kp; ++p) d[p * MR + i] = 0;
        continue;
      }
      const float* src = a + (r0 + i) * lda + k0;
      int64_t p = 0;
      for (; 2 * p + 32 <= len; p += 16) {
        const __m512bh v =
            _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 2 * p + 16), _mm512_loadu_ps(src + 2 * p));
        _mm512_i32scatter_epi32(d + p * MR + i, lane_offsets, reinterpret_cast<const __m512i&>(v),
                                4);
      }
      for (; p < kp; ++p) {
        d[p * MR + i] = bf16_pair(src[2 * p], 2 * p + 1 < len ? src[2 * p + 1] : 0.0f);
      }
    }
  }
}

// Rows of A converted to K pairs, contiguous: dst[r][p].
void convert_rows(const float* a, int64_t lda, int64_t rows, int64_t k, uint32_t* dst) {
  const int64_t kp = ceil_div(k, 2);
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = a + r * lda;
    for (int64_t p = 0; p < kp; ++p) {
      dst[r * kp + p] = bf16_pair(src[2 * p], 2 * p + 1 < k ? src[2 * p + 1] : 0.0f);
    }
  }
}

// Writes columns [j0, j0 + nr) of a finished row (bias, epilogue).
void finish_row(const Bf16Gemm& g, float* row, int64_t j0, int64_t len) {
  if (g.bias) {
    for (int64_t j = 0; j < len; ++j) row[j] += g.bias[j0 + j];
  }
  if (g.epilogue) g.epilogue->apply(row, len);
}

// How far ahead of a skinny product's B stream to prefetch: 2 KiB. Llama-3-8B decode at O3 went
// from 43.6-44.6 to 35.2-35.4 ms with it; 4 and 8 KiB measured the same (docs/performance.md).
constexpr int64_t kSkinnyPrefetchWords = 512;

// Few rows: stream each packed B sliver once, M rows at a time; two accumulator sets per row
// hide the VDPBF16PS latency.
template <int M>
CUVIL_BF16_TARGET void skinny(const Bf16Gemm& g, const uint32_t* ap, int64_t s0, int64_t s1) {
  const int64_t kp = ceil_div(g.k, 2);
  for (int64_t s = s0; s < s1; ++s) {
    const uint32_t* b = g.b + s * kp * NR;
    __m512 acc[M][4];
    for (int m = 0; m < M; ++m) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 2 <= kp; p += 2) {
      // The sliver is one long sequential stream per thread: fetch ahead of it by hand.
      const char* ahead = reinterpret_cast<const char*>(b + p * NR + kSkinnyPrefetchWords);
      _mm_prefetch(ahead, _MM_HINT_T0);
      _mm_prefetch(ahead + 64, _MM_HINT_T0);
      _mm_prefetch(ahead + 128, _MM_HINT_T0);
      _mm_prefetch(ahead + 192, _MM_HINT_T0);
      const __m512bh b0 = as_bh(_mm512_loadu_si512(b + p * NR));
      const __m512bh b1 = as_bh(_mm512_loadu_si512(b + p * NR + 16));
      const __m512bh b2 = as_bh(_mm512_loadu_si512(b + p * NR + 32));
      const __m512bh b3 = as_bh(_mm512_loadu_si512(b + p * NR + 48));
      for (int m = 0; m < M; ++m) {
        const __m512bh a0 = as_bh(_mm512_set1_epi32(static_cast<int>(ap[m * kp + p])));
        const __m512bh a1 = as_bh(_mm512_set1_epi32(static_cast<int>(ap[m * kp + p + 1])));
        acc[m][0] = _mm512_dpbf16_ps(acc[m][0], a0, b0);
        acc[m][1] = _mm512_dpbf16_ps(acc[m][1], a0, b1);
        acc[m][2] = _mm512_dpbf16_ps(acc[m][2], a1, b2);
        acc[m][3] = _mm512_dpbf16_ps(acc[m][3], a1, b3);
      }
    }
    for (; p < kp; ++p) {
      const __m512bh b0 = as_bh(_mm512_loadu_si512(b + p * NR));
      const __m512bh b1 = as_bh(_mm512_loadu_si512(b + p * NR + 16));
      for (int m = 0; m < M; ++m) {
        const __m512bh a0 = as_bh(_mm512_set1_epi32(static_cast<int>(ap[m * kp + p])));
        acc[m][0] = _mm512_dpbf16_ps(acc[m][0], a0, b0);
        acc[m][1] = _mm512_dpbf16_ps(acc[m][1], a0, b1);
      }
    }
    const int64_t j0 = s * NR;
    const int64_t nr = std::min<int64_t>(NR, g.n - j0);
    for (int m = 0; m < M; ++m) {
      alignas(64) float out[NR];
      _mm512_store_ps(out, _mm512_add_ps(acc[m][0], acc[m][2]));
      _mm512_store_ps(out + 16, _mm512_add_ps(acc[m][1], acc[m][3]));
      float* row = g.c + m * g.ldc + j0;
      std::copy(out, out + nr, row);
      finish_row(g, row, j0, nr);
    }
  }
}

void skinny_rows(const Bf16Gemm& g, const uint32_t* ap, int64_t s0, int64_t s1) {
  switch (g.m) {
    case 1:
      return skinny<1>(g, ap, s0, s1);
    case 2:
      return skinny<2>(g, ap, s0, s1);
    case 3:
      return skinny<3>(g, ap, s0, s1);
    default:
      return skinny<4>(g, ap, s0, s1);
  }
}

constexpr int64_t kSkinnyRows = kBf16SkinnyRows;

// Rows [i0, i1) x slivers [s0, s1) of C on thread tid.
void gemm_block(const Bf16Gemm& g, int64_t i0, int64_t i1, int64_t s0, int64_t s1, ThreadPool& pool,
                int tid) {
  const int64_t kp = ceil_div(g.k, 2);
  const int64_t mc_max = round_up(std::max<int64_t>(1, g.blocking.mc), MR);
  const int64_t kcp_max = std::max<int64_t>(1, g.blocking.kc / 2);
  const int64_t ncs = std::max<int64_t>(1, g.blocking.nc / NR);
  const int64_t kcp_cap = std::min(kcp_max, std::max<int64_t>(kp, 1));
  uint32_t* ap = reinterpret_cast<uint32_t*>(
      pool.scratch(tid, ThreadPool::kPackA,
                   static_cast<size_t>(std::min(mc_max, round_up(i1 - i0, MR)) * kcp_cap)));
  float* tile = pool.scratch(tid, ThreadPool::kTile, MR * NR);

  for (int64_t js = s0; js < s1; js += ncs) {
    const int64_t je = std::min(s1, js + ncs);
    const int64_t col0 = js * NR, cols = std::min(g.n, je * NR) - col0;
    for (int64_t pc = 0; pc < kp || pc == 0; pc += kcp_max) {
      const int64_t kcp = std::min(kcp_max, kp - pc);
      const bool first = pc == 0, last = pc + kcp >= kp;
      for (int64_t ic = i0; ic < i1; ic += mc_max) {
        const int64_t mc = std::min(mc_max, i1 - ic);
        pack_a(g.a + ic * g.lda, g.lda, mc, 2 * pc, std::min(g.k, 2 * (pc + kcp)), kcp, ap);
        for (int64_t s = js; s < je; ++s) {
          const int64_t j0 = s * NR;
          const int64_t nr = std::min<int64_t>(NR, g.n - j0);
          const uint32_t* bs = g.b + (s * kp + pc) * NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t mr = std::min<int64_t>(MR, mc - ir);
            float* c = g.c + (ic + ir) * g.ldc + j0;
            if (mr == MR && nr == NR) {
              micro(kcp, ap + ir * kcp, bs, c, g.ldc, !first);
            } else {
              micro(kcp, ap + ir * kcp, bs, tile, NR, false);
              for (int64_t i = 0; i < mr; ++i) {
                for (int64_t j = 0; j < nr; ++j) {
                  c[i * g.ldc + j] = (first ? 0.0f : c[i * g.ldc + j]) + tile[i * NR + j];
                }
              }
            }
          }
        }
        if (last && (g.bias || g.epilogue)) {
          for (int64_t i = 0; i < mc; ++i) finish_row(g, g.c + (ic + i) * g.ldc + col0, col0, cols);
        }
      }
      if (kp == 0) break;
    }
  }
}

// ---- AMX-BF16 path (rows > kSkinnyRows when cpu_has_amx_bf16()) ----
// Tiles: C 32 x 32 in tmm0..3 (two row halves x two column halves), A rows in tmm4/5 (16 rows x
// 32 bf16), B in tmm6/7 (16 K pairs x 16 columns): the packed sliver layout is exactly two B
// tiles side by side with a row stride of NR words. A is converted to row-major bf16 per panel.
constexpr int kAmxRows = 32;  // C rows per tile block
constexpr int kAmxK = 32;     // K elements per TDPBF16PS

// Rows [0, rows) x columns [k0, k0 + kc) of fp32 A -> row-major bf16 dst[rows_pad][kc_pad],
// zero-padded.
CUVIL_AMX_TARGET void convert_a_rowmajor(const float* a, int64_t lda, int64_t rows,
                                         int64_t rows_pad, int64_t k0, int64_t kc, int64_t kc_pad,
                                         uint16_t* dst) {
  for (int64_t r = 0; r < rows_pad; ++r) {
    uint16_t* d = dst + r * kc_pad;
    if (r >= rows) {
      std::fill(d, d + kc_pad, uint16_t{0});
      continue;
    }
    const float* src = a + r * lda + k0;
    int64_t p = 0;
    for (; p + 32 <= kc; p += 32) {
      const __m512bh v =
          _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + p + 16), _mm512_loadu_ps(src + p));
      _mm512_storeu_si512(d + p, reinterpret_cast<const __m512i&>(v));
    }
    for (; p < kc; ++p) d[p] = to_bf16(src[p]);
    for (; p < kc_pad; ++p) d[p] = 0;
  }
}

// One 32 x 32 block of C (+)= A[32, kc_pad] x B sliver over kc_pad / 32 steps.
CUVIL_AMX_TARGET void amx_block(const uint16_t* a, int64_t kc_pad, const uint32_t* b, int64_t steps,
                                float* c, int64_t ldc, bool accumulate) {
  const int64_t cs = ldc * static_cast<int64_t>(sizeof(float));
  if (accumulate) {
    _tile_loadd(0, c, cs);
    _tile_loadd(1, c + 16, cs);
    _tile_loadd(2, c + 16 * ldc, cs);
    _tile_loadd(3, c + 16 * ldc + 16, cs);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const int64_t as = kc_pad * static_cast<int64_t>(sizeof(uint16_t));
  constexpr int64_t bs = NR * sizeof(uint32_t);
  for (int64_t t = 0; t < steps; ++t) {
    _tile_loadd(4, a + t * kAmxK, as);
    _tile_loadd(5, a + 16 * kc_pad + t * kAmxK, as);
    _tile_loadd(6, b + t * 16 * NR, bs);
    _tile_loadd(7, b + t * 16 * NR + 16, bs);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, cs);
  _tile_stored(1, c + 16, cs);
  _tile_stored(2, c + 16 * ldc, cs);
  _tile_stored(3, c + 16 * ldc + 16, cs);
}

void gemm_block_amx(const Bf16Gemm& g, int64_t i0, int64_t i1, int64_t s0, int64_t s1,
                    ThreadPool& pool, int tid) {
  configure_amx_tiles();
  const int64_t kp = ceil_div(g.k, 2);
  const int64_t kcb = round_up(std::max<int64_t>(kAmxK, g.blocking.kc), kAmxK);
  const int64_t mc_max = round_up(std::max<int64_t>(1, g.blocking.mc), kAmxRows);
  const int64_t ncs = std::max<int64_t>(1, g.blocking.nc / NR);
  const int64_t rows_cap = std::min(mc_max, round_up(i1 - i0, kAmxRows));
  const int64_t kc_cap = std::min(kcb, round_up(std::max<int64_t>(g.k, 1), kAmxK));
  uint16_t* ap = reinterpret_cast<uint16_t*>(
      pool.scratch(tid, ThreadPool::kPackA, static_cast<size_t>(rows_cap * kc_cap / 2 + 16)));
  float* tile = pool.scratch(tid, ThreadPool::kTile, kAmxRows * NR);
  for (int64_t js = s0; js < s1; js += ncs) {
    const int64_t je = std::min(s1, js + ncs);
    const int64_t col0 = js * NR, cols = std::min(g.n, je * NR) - col0;
    for (int64_t pc = 0; pc < g.k || pc == 0; pc += kcb) {
      const int64_t kc = std::min(kcb, g.k - pc);
      const int64_t kc_pad = round_up(std::max<int64_t>(kc, 1), kAmxK);
      const bool first = pc == 0, last = pc + kc >= g.k;
      for (int64_t ic = i0; ic < i1; ic += mc_max) {
        const int64_t mc = std::min(mc_max, i1 - ic);
        const int64_t mc_pad = round_up(mc, kAmxRows);
        convert_a_rowmajor(g.a + ic * g.lda, g.lda, mc, mc_pad, pc, kc, kc_pad, ap);
        for (int64_t s = js; s < je; ++s) {
          const int64_t j0 = s * NR;
          const int64_t nr = std::min<int64_t>(NR, g.n - j0);
          const uint32_t* bs = g.b + (s * kp + pc / 2) * NR;
          for (int64_t ir = 0; ir < mc_pad; ir += kAmxRows) {
            const int64_t mr = std::min<int64_t>(kAmxRows, mc - ir);
            float* c = g.c + (ic + ir) * g.ldc + j0;
            if (mr == kAmxRows && nr == NR) {
              amx_block(ap + ir * kc_pad, kc_pad, bs, kc_pad / kAmxK, c, g.ldc, !first);
              continue;
            }
            // Edge block: through a 32 x 32 buffer holding the valid part of C.
            std::fill(tile, tile + kAmxRows * NR, 0.0f);
            if (!first) {
              for (int64_t i = 0; i < mr; ++i)
                std::copy(c + i * g.ldc, c + i * g.ldc + nr, tile + i * NR);
            }
            amx_block(ap + ir * kc_pad, kc_pad, bs, kc_pad / kAmxK, tile, NR, !first);
            for (int64_t i = 0; i < mr; ++i)
              std::copy(tile + i * NR, tile + i * NR + nr, c + i * g.ldc);
          }
        }
        if (last && (g.bias || g.epilogue)) {
          for (int64_t i = 0; i < mc; ++i) finish_row(g, g.c + (ic + i) * g.ldc + col0, col0, cols);
        }
      }
      if (g.k == 0) break;
    }
  }
}

}  // namespace

int64_t bf16_packed_words(int64_t k, int64_t n) {
  // Plus one AMX step of K pairs: the last tile load of the last sliver may read past its pairs
  // (against zero A columns).
  return ceil_div(n, NR) * ceil_div(k, 2) * NR + kAmxK / 2 * NR;
}

void pack_b_bf16(const float* b, int64_t ldb, bool transposed, int64_t k, int64_t n, uint32_t* dst,
                 ThreadPool* pool) {
  const int64_t kp = ceil_div(k, 2);
  auto slivers = [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      uint32_t* d = dst + s * kp * NR;
      const int64_t j0 = s * NR;
      const int64_t nr = std::min<int64_t>(NR, n - j0);
      if (transposed) {
        for (int64_t j = 0; j < NR; ++j) {
          const float* src = b + (j0 + j) * ldb;
          for (int64_t p = 0; p < kp; ++p) {
            d[p * NR + j] =
                j < nr ? bf16_pair(src[2 * p], 2 * p + 1 < k ? src[2 * p + 1] : 0.0f) : 0u;
          }
        }
      } else {
        for (int64_t p = 0; p < kp; ++p) {
          const float* even = b + 2 * p * ldb + j0;
          const float* odd = 2 * p + 1 < k ? even + ldb : nullptr;
          for (int64_t j = 0; j < NR; ++j) {
            d[p * NR + j] = j < nr ? bf16_pair(even[j], odd ? odd[j] : 0.0f) : 0u;
          }
        }
      }
    }
  };
  const int64_t count = ceil_div(n, NR);
  std::fill(dst + count * kp * NR, dst + bf16_packed_words(k, n), 0u);
  if (pool) {
    pool->parallel_for(count, slivers);
  } else {
    slivers(0, count);
  }
}

void gemm_bf16(const Bf16Gemm& g, ThreadPool& pool) {
  CUVIL_CHECK(cpu_has_avx512_bf16(), "gemm_bf16 called on a CPU without avx512_bf16");
  if (g.m <= 0 || g.n <= 0) return;
  const int64_t slivers = ceil_div(g.n, NR);
  if (g.m <= kSkinnyRows) {
    const int64_t kp = ceil_div(g.k, 2);
    uint32_t* ap = reinterpret_cast<uint32_t*>(
        pool.scratch(pool.current_thread(), ThreadPool::kPackB, static_cast<size_t>(g.m * kp + 1)));
    convert_rows(g.a, g.lda, g.m, g.k, ap);
    pool.parallel_for(slivers, [&](int64_t s0, int64_t s1) { skinny_rows(g, ap, s0, s1); });
    return;
  }
  const bool amx = cpu_has_amx_bf16();
  split_lowp_gemm(pool, g.m, g.n, g.k, NR, amx ? kAmxRows : MR,
                  [&](int64_t i0, int64_t i1, int64_t b0, int64_t b1, int tid) {
                    if (amx) {
                      gemm_block_amx(g, i0, i1, b0, b1, pool, tid);
                    } else {
                      gemm_block(g, i0, i1, b0, b1, pool, tid);
                    }
                  });
}

}  // namespace cuvil::runtime::cpu
