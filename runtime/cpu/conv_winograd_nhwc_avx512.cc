// AVX-512 transforms and GEMM tiles of conv2d.winograd_nhwc and conv2d.winograd_bf16 (the schedule,
// weight transform and portable versions are in conv_winograd_nhwc.cc). This file alone is
// compiled for AVX-512 (the target pragma below) and runs only when conv2d_winograd_nhwc_isa()
// is avx512; headers come before the pragma, so that no inline code of theirs is compiled for it,
// except the driver (conv_winograd_nhwc_driver.h), whose code is file-local.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/cpu/conv_winograd_bf16.h"
#include "runtime/cpu/conv_winograd_nhwc_shared.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/register_tile.h"
#include "runtime/thread_pool.h"

#include "runtime/cpu/target_avx512_begin.h"

namespace cuvil::runtime::cpu::winograd {

namespace {

// One vector of 16 channels for the transforms: an AVX-512 register.
using Vec = __m512;
inline Vec vzero() {
  return _mm512_setzero_ps();
}
inline Vec vload(const float* p, uint16_t mask) {
  return _mm512_maskz_loadu_ps(mask, p);
}
inline void vstore(float* p, Vec v) {
  _mm512_storeu_ps(p, v);
}
inline void vstore(float* p, uint16_t mask, Vec v) {
  _mm512_mask_storeu_ps(p, mask, v);
}
inline Vec vadd(Vec a, Vec b) {
  return _mm512_add_ps(a, b);
}
inline Vec vsub(Vec a, Vec b) {
  return _mm512_sub_ps(a, b);
}
inline Vec vfma(float c, Vec x, Vec acc) {
  return _mm512_fmadd_ps(_mm512_set1_ps(c), x, acc);
}

// V holds fp32, or bf16 for conv2d.winograd_bf16 (rounded to nearest even, as VCVTNEPS2BF16).
inline void store_v(float* p, Vec v) {
  vstore(p, v);
}
inline void store_v(uint16_t* p, Vec v) {
  // The maskz forms: GCC 12's plain ones start from an undefined register and warn.
  constexpr __mmask16 kAll = 0xffff;
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb =
      _mm512_and_si512(_mm512_maskz_srli_epi32(kAll, bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(p),
      _mm512_maskz_cvtepi32_epi16(kAll, _mm512_maskz_srli_epi32(kAll, rounded, 16)));
}

// One of the a^2 GEMMs for MR tiles x NV vectors of output channels, over all C input channels:
// m[p][lanes] = sum_c v[p * v_stride + c] * u[c][lanes]. u rows are bw floats apart; results
// go to m with bw floats per tile.
using GemmFn = void (*)(const float* v, int64_t v_stride, int64_t c, const float* u, int64_t bw,
                        float* m);

template <int MR, int NV>
void gemm_tile(const float* v, int64_t v_stride, int64_t c, const float* u, int64_t bw, float* m) {
  __m512 acc[MR][NV];
  for (int p = 0; p < MR; ++p) {
    for (int j = 0; j < NV; ++j) acc[p][j] = _mm512_setzero_ps();
  }
#pragma GCC unroll 4
  for (int64_t ci = 0; ci < c; ++ci) {
    __m512 w[NV];
    for (int j = 0; j < NV; ++j) w[j] = _mm512_loadu_ps(u + ci * bw + j * kLanes);
    for (int p = 0; p < MR; ++p) {
      const __m512 xb = _mm512_set1_ps(v[p * v_stride + ci]);
      for (int j = 0; j < NV; ++j) acc[p][j] = _mm512_fmadd_ps(xb, w[j], acc[p][j]);
    }
  }
  for (int p = 0; p < MR; ++p) {
    for (int j = 0; j < NV; ++j) _mm512_storeu_ps(m + p * bw + j * kLanes, acc[p][j]);
  }
}

struct Gemms {
  template <int MR, int NV>
  static constexpr GemmFn fn() {
    return &gemm_tile<MR, NV>;
  }
};

constexpr auto kGemms = register_tile_table<GemmFn, Gemms>();

GemmFn gemm_fn(int mr, int nv) {
  return kGemms[register_tile_index(mr, nv)];
}

}  // namespace

}  // namespace cuvil::runtime::cpu::winograd

#include "runtime/cpu/conv_winograd_nhwc_driver.h"

namespace cuvil::runtime::cpu::winograd {

void run_avx512(const KernelArgs& a, const ConvGeometry& g, const WinogradShape& d,
                const WinogradConvPlan& plan, const float* u) {
  run_with(a, g, d, plan, u);
}

void run_avx512(const KernelArgs& a, const ConvGeometry& g, const WinogradShape& d,
                const WinogradConvPlan& plan, const uint16_t* u) {
  run_with(a, g, d, plan, u);
}

}  // namespace cuvil::runtime::cpu::winograd

#include "runtime/cpu/target_end.h"
