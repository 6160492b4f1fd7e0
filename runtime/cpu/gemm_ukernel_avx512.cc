// AVX-512 micro-kernels. This file alone is compiled for AVX-512 (the target pragma below), so
// the binary runs on CPUs without it as long as these functions are not called there. Standard
// headers come before the pragma so that no inline library code is compiled for AVX-512.
#include <cstdint>
#include <vector>

#include "runtime/cpu/gemm_ukernel.h"

// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register and warn about it
// where they are inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")
#include <immintrin.h>

namespace cuvil::runtime::cpu {

namespace {

// MR rows x NV 16-float vectors: MR*NV accumulators in zmm registers, NV B vectors loaded per
// step, A broadcast from memory.
template <int MR, int NV>
void micro_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                  bool accumulate) {
  constexpr int NR = NV * 16;
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_ps(b + 16 * v);
    _mm_prefetch(reinterpret_cast<const char*>(b + 8 * NR), _MM_HINT_T0);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += MR;
    b += NR;
  }
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

}  // namespace
}  // namespace cuvil::runtime::cpu

// The table is built by code compiled for the baseline target: it runs before any CPUID check.
#pragma GCC pop_options

namespace cuvil::runtime::cpu {

std::vector<MicroKernel> avx512_micro_kernels() {
  return {
      {GemmIsa::avx512, 12, 32, micro_avx512<12, 2>},
      {GemmIsa::avx512, 14, 32, micro_avx512<14, 2>},
      {GemmIsa::avx512, 8, 32, micro_avx512<8, 2>},
      {GemmIsa::avx512, 6, 64, micro_avx512<6, 4>},
      {GemmIsa::avx512, 4, 64, micro_avx512<4, 4>},
  };
}

}  // namespace cuvil::runtime::cpu
