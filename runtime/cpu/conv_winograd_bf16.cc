#include "runtime/cpu/conv_winograd_bf16.h"

// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register and warn about it
// where they are inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "runtime/cpu/register_tile.h"

// Compiled for AVX512_BF16 whatever -march says; only called after cpu_has_avx512_bf16().
#include "runtime/cpu/target_attributes.h"

namespace cuvil::runtime::cpu {

namespace {

CUVIL_BF16_TARGET inline __m512bh as_bh(__m512i v) {
  return reinterpret_cast<__m512bh&>(v);
}

template <int MR, int NV>
CUVIL_BF16_TARGET void gemm_tile_bf16(const uint16_t* v, int64_t v_stride, int64_t pairs,
                                      const uint16_t* u, int64_t bw, float* m) {
  __m512 acc[MR][NV];
  for (int p = 0; p < MR; ++p) {
    for (int j = 0; j < NV; ++j) acc[p][j] = _mm512_setzero_ps();
  }
#pragma GCC unroll 4
  for (int64_t c2 = 0; c2 < pairs; ++c2) {
    __m512bh w[NV];
    for (int j = 0; j < NV; ++j) {
      w[j] = as_bh(_mm512_loadu_si512(u + (c2 * bw + j * kLanes) * 2));
    }
    for (int p = 0; p < MR; ++p) {
      int32_t pair;
      std::memcpy(&pair, v + p * v_stride + 2 * c2, sizeof pair);
      const __m512bh xb = as_bh(_mm512_set1_epi32(pair));
      for (int j = 0; j < NV; ++j) acc[p][j] = _mm512_dpbf16_ps(acc[p][j], xb, w[j]);
    }
  }
  for (int p = 0; p < MR; ++p) {
    for (int j = 0; j < NV; ++j) _mm512_storeu_ps(m + p * bw + j * kLanes, acc[p][j]);
  }
}

struct GemmBf16s {
  template <int MR, int NV>
  static constexpr WinogradBf16GemmFn fn() {
    return &gemm_tile_bf16<MR, NV>;
  }
};

constexpr auto kGemms = register_tile_table<WinogradBf16GemmFn, GemmBf16s>();

}  // namespace

WinogradBf16GemmFn winograd_bf16_gemm(int mr, int nv) {
  return kGemms[register_tile_index(mr, nv)];
}

}  // namespace cuvil::runtime::cpu
