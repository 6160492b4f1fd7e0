// AVX2 + FMA micro-kernels (16 ymm registers). Compiled for AVX2 by the target pragma below;
// standard headers come before it so that no inline library code is compiled for AVX2.
#include <cstdint>
#include <vector>

#include "runtime/cpu/gemm_ukernel.h"

#include "runtime/cpu/target_avx2_begin.h"

namespace cuvil::runtime::cpu {

namespace {

// MR rows x NV 8-float vectors; MR*NV + NV + 1 <= 16 registers.
template <int MR, int NV>
void micro_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                bool accumulate) {
  constexpr int NR = NV * 8;
  __m256 acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    __m256 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_load_ps(b + 8 * v);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += MR;
    b += NR;
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    float* row = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (accumulate) acc[i][v] = _mm256_add_ps(acc[i][v], _mm256_loadu_ps(row + 8 * v));
      _mm256_storeu_ps(row + 8 * v, acc[i][v]);
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime::cpu

// The table is built by code compiled for the baseline target: it runs before any CPUID check.
#include "runtime/cpu/target_end.h"

namespace cuvil::runtime::cpu {

std::vector<MicroKernel> avx2_micro_kernels() {
  return {
      {GemmIsa::avx2, 6, 16, micro_avx2<6, 2>},
      {GemmIsa::avx2, 4, 24, micro_avx2<4, 3>},
  };
}

}  // namespace cuvil::runtime::cpu
