// AVX2 + FMA transforms and GEMM tiles of conv2d.winograd_nhwc (the schedule, weight transform
// and portable versions are in conv_winograd_nhwc.cc; conv2d.winograd_bf16 needs AVX512_BF16 and
// has none here). This file alone is compiled for AVX2 (the target pragma below) and runs only
// when conv2d_winograd_nhwc_isa() is avx2; headers come before the pragma, so that no inline code
// of theirs is compiled for it, except the driver (conv_winograd_nhwc_driver.h), whose code is
// file-local.
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

#include "runtime/cpu/target_avx2_begin.h"

#include "runtime/cpu/elementwise_math_avx2.h"

namespace cuvil::runtime::cpu::winograd {

namespace {

constexpr int kHalf = 8;  // floats per ymm register

// One vector of 16 channels for the transforms: two ymm registers.
struct Vec {
  __m256 lo, hi;
};

// Lanes [0, 8) and [8, 16) of a lane mask (contiguous low bits) as ymm load/store masks.
inline __m256i lo_mask(uint16_t mask) {
  return avx2::first_lanes(__builtin_popcount(mask));
}
inline __m256i hi_mask(uint16_t mask) {
  return avx2::first_lanes(__builtin_popcount(mask) - kHalf);
}

inline Vec vzero() {
  return {_mm256_setzero_ps(), _mm256_setzero_ps()};
}
inline Vec vload(const float* p, uint16_t mask) {
  if (mask == 0xffff) return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + kHalf)};
  return {_mm256_maskload_ps(p, lo_mask(mask)), _mm256_maskload_ps(p + kHalf, hi_mask(mask))};
}
inline void vstore(float* p, Vec v) {
  _mm256_storeu_ps(p, v.lo);
  _mm256_storeu_ps(p + kHalf, v.hi);
}
inline void vstore(float* p, uint16_t mask, Vec v) {
  if (mask == 0xffff) {
    vstore(p, v);
    return;
  }
  _mm256_maskstore_ps(p, lo_mask(mask), v.lo);
  _mm256_maskstore_ps(p + kHalf, hi_mask(mask), v.hi);
}
inline Vec vadd(Vec a, Vec b) {
  return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)};
}
inline Vec vsub(Vec a, Vec b) {
  return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)};
}
inline Vec vfma(float c, Vec x, Vec acc) {
  const __m256 cv = _mm256_set1_ps(c);
  return {_mm256_fmadd_ps(cv, x.lo, acc.lo), _mm256_fmadd_ps(cv, x.hi, acc.hi)};
}
inline void store_v(float* p, Vec v) {
  vstore(p, v);
}

// One of the a^2 GEMMs for MR tiles x NV vectors of output channels, over all C input channels:
// m[p][lanes] = sum_c v[p * v_stride + c] * u[c][lanes]. u rows are bw floats apart; results
// go to m with bw floats per tile. AVX2 has 16 registers, so it runs as sub-tiles of at most 6
// tiles x one vector (2 * 6 accumulators, two of U, one broadcast), as conv2d.direct_nhwc's.
using GemmFn = void (*)(const float* v, int64_t v_stride, int64_t c, const float* u, int64_t bw,
                        float* m);

constexpr int kSubRows = 6;

template <int P>
void gemm_sub_tile(const float* v, int64_t v_stride, int64_t c, const float* u, int64_t bw,
                   float* m) {
  __m256 lo[P], hi[P];
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) lo[p] = hi[p] = _mm256_setzero_ps();
  const float* vp[P];
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) vp[p] = v + p * v_stride;
#pragma GCC unroll 4
  for (int64_t ci = 0; ci < c; ++ci) {
    const __m256 w0 = _mm256_loadu_ps(u + ci * bw);
    const __m256 w1 = _mm256_loadu_ps(u + ci * bw + kHalf);
#pragma GCC unroll 6
    for (int p = 0; p < P; ++p) {
      const __m256 xb = _mm256_broadcast_ss(vp[p] + ci);
      lo[p] = _mm256_fmadd_ps(xb, w0, lo[p]);
      hi[p] = _mm256_fmadd_ps(xb, w1, hi[p]);
    }
  }
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) {
    _mm256_storeu_ps(m + p * bw, lo[p]);
    _mm256_storeu_ps(m + p * bw + kHalf, hi[p]);
  }
}

constexpr GemmFn kSubTiles[kSubRows] = {&gemm_sub_tile<1>, &gemm_sub_tile<2>, &gemm_sub_tile<3>,
                                        &gemm_sub_tile<4>, &gemm_sub_tile<5>, &gemm_sub_tile<6>};

template <int MR, int NV>
void gemm_tile(const float* v, int64_t v_stride, int64_t c, const float* u, int64_t bw, float* m) {
  constexpr int kChunks = (MR + kSubRows - 1) / kSubRows;
  constexpr int kRows = (MR + kChunks - 1) / kChunks;  // even sub-tiles: 14 -> 5 + 5 + 4
  for (int j = 0; j < NV; ++j) {
    for (int p0 = 0; p0 < MR; p0 += kRows) {
      const int n = std::min(kRows, MR - p0);
      kSubTiles[n - 1](v + p0 * v_stride, v_stride, c, u + j * kLanes, bw,
                       m + p0 * bw + j * kLanes);
    }
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

void run_avx2(const KernelArgs& a, const ConvGeometry& g, const WinogradShape& d,
              const WinogradConvPlan& plan, const float* u) {
  run_with(a, g, d, plan, u);
}

}  // namespace cuvil::runtime::cpu::winograd

#include "runtime/cpu/target_end.h"
