// The micro-kernels of flash attention (attention_flash.cc): the portable set there, the AVX-512
// and AVX2 sets in attention_flash_avx512.cc and attention_flash_avx2.cc; sdpa_flash_isa() picks
// one per call.
#pragma once

#include <cstdint>
#include <limits>

namespace cuvil::runtime::cpu {

constexpr int64_t kFlashPanel = 32;  // keys per packed K^T panel
constexpr int kFlashQkRows = 12;     // query rows per Q K^T register tile (x 32 keys)

struct FlashKernels {
  // s[r][0:32] = sum_t q[r*d + t] * kp[t][0:32] for rows <= kFlashQkRows rows.
  void (*qk_rows)(int rows, const float* q, int64_t d, const float* kp, float* s, int64_t lds);
  // P = 2^(S - m_new) over the `valid` first entries, 0 over [valid, n); updates m and l and
  // returns the accumulator's rescale factor 2^(m_old - m_new).
  float (*online_softmax_row)(float* s, int64_t valid, int64_t n, float& m, float& l);
  // O[rows, dv] = alpha * O + P[rows, n] V[n, dv].
  void (*pv_block)(int64_t rows, const float* p, int64_t ldp, int64_t n, const float* v, int64_t dv,
                   const float* alpha, float* o);
};

const FlashKernels& flash_kernels_avx512();
const FlashKernels& flash_kernels_avx2();

}  // namespace cuvil::runtime::cpu
