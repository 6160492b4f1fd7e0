// AVX-512 micro-kernels. This file alone is compiled for AVX-512 (the target pragma below), so
// the binary runs on CPUs without it as long as these functions are not called there. Standard
// headers come before the pragma so that no inline library code is compiled for AVX-512.
#include <cstdint>
#include <vector>

#include "runtime/cpu/gemm_ukernel.h"

#include "runtime/cpu/target_avx512_begin.h"

namespace cuvil::runtime::cpu {

namespace {

// MR rows x NV 16-float vectors: MR*NV accumulators in zmm registers, NV B vectors loaded per
// step, A broadcast from memory. C's rows are prefetched into L2 first: they are read (when
// accumulating) and written only after the kc loop, and usually live in memory or L3.
template <int MR, int NV>
inline void compute_avx512(int64_t kc, const float* a, const float* b, const float* c, int64_t ldc,
                           __m512 (&acc)[MR][NV], const float* pf = nullptr, int64_t pf_lines = 0) {
  constexpr int NR = NV * 16;
  // One line of the second stream every `every` steps, counted down (no division per step).
  const int64_t every = pf_lines > 0 ? (kc > pf_lines ? kc / pf_lines : 1) : kc + 1;
  int64_t countdown = every;
  const char* pf_line = reinterpret_cast<const char*>(pf);
  const char* pf_end = pf_line + pf_lines * 64;
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + NR - 1), _MM_HINT_T1);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_ps(b + 16 * v);
    _mm_prefetch(reinterpret_cast<const char*>(b + 8 * NR), _MM_HINT_T0);
    if (--countdown == 0) {
      countdown = every;
      if (pf_line < pf_end) {
        _mm_prefetch(pf_line, _MM_HINT_T1);
        pf_line += 64;
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += MR;
    b += NR;
  }
}

template <int MR, int NV>
inline void store_avx512(float* c, int64_t ldc, bool accumulate, __m512 (&acc)[MR][NV]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float* row = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (accumulate) acc[i][v] = _mm512_add_ps(acc[i][v], _mm512_loadu_ps(row + 16 * v));
      _mm512_storeu_ps(row + 16 * v, acc[i][v]);
    }
  }
}

template <int MR, int NV>
void micro_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                  bool accumulate) {
  __m512 acc[MR][NV];
  compute_avx512<MR, NV>(kc, a, b, c, ldc, acc);
  store_avx512<MR, NV>(c, ldc, accumulate, acc);
}

template <int MR, int NV>
void micro_avx512_prefetching(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                              bool accumulate, const float* pf, int64_t pf_lines) {
  __m512 acc[MR][NV];
  compute_avx512<MR, NV>(kc, a, b, c, ldc, acc, pf, pf_lines);
  store_avx512<MR, NV>(c, ldc, accumulate, acc);
}

// Edge tiles store straight into C under row bounds and column masks (no scratch tile).
template <int MR, int NV>
void micro_avx512_edge(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                       bool accumulate, int m, int n) {
  __m512 acc[MR][NV];
  compute_avx512<MR, NV>(kc, a, b, c, ldc, acc);
  __mmask16 mask[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int cols = n - 16 * v;
    mask[v] = cols >= 16 ? 0xffff : cols <= 0 ? 0 : static_cast<__mmask16>((1u << cols) - 1u);
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (i >= m) break;
    float* row = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (accumulate) {
        acc[i][v] = _mm512_add_ps(acc[i][v], _mm512_maskz_loadu_ps(mask[v], row + 16 * v));
      }
      _mm512_mask_storeu_ps(row + 16 * v, mask[v], acc[i][v]);
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime::cpu

// The table is built by code compiled for the baseline target: it runs before any CPUID check.
#include "runtime/cpu/target_end.h"

namespace cuvil::runtime::cpu {

std::vector<MicroKernel> avx512_micro_kernels() {
  return {
      {GemmIsa::avx512, 12, 32, micro_avx512<12, 2>, micro_avx512_edge<12, 2>,
       micro_avx512_prefetching<12, 2>},
      {GemmIsa::avx512, 14, 32, micro_avx512<14, 2>, micro_avx512_edge<14, 2>,
       micro_avx512_prefetching<14, 2>},
      {GemmIsa::avx512, 8, 32, micro_avx512<8, 2>, micro_avx512_edge<8, 2>,
       micro_avx512_prefetching<8, 2>},
      {GemmIsa::avx512, 6, 64, micro_avx512<6, 4>, micro_avx512_edge<6, 4>,
       micro_avx512_prefetching<6, 4>},
      {GemmIsa::avx512, 4, 64, micro_avx512<4, 4>, micro_avx512_edge<4, 4>,
       micro_avx512_prefetching<4, 4>},
  };
}

}  // namespace cuvil::runtime::cpu
