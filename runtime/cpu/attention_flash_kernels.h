// The micro-kernels of flash attention (attention_flash.cc): the portable set there, the AVX-512
// and AVX2 sets in attention_flash_avx512.cc and attention_flash_avx2.cc; sdpa_flash_isa() picks
// one per call. sdpa.flash_bf16's products are in attention_flash_bf16.cc.
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

// The two products of sdpa.flash_bf16 on VDPBF16PS, fp32 accumulators. A word holds two bf16, the
// lower index in the low half (the unit VDPBF16PS multiplies pairwise); the softmax between the
// products stays fp32 (FlashKernels::online_softmax_row).
struct FlashBf16Kernels {
  // s[r][0:32] = sum_t q[r][t] * kp[t][0:32] for rows <= kFlashQkRows rows: q is rows x dp words
  // (pairs of head dims), kp a panel of 32 keys as [dp][32] words.
  void (*qk_rows)(int rows, const uint32_t* q, int64_t dp, const uint32_t* kp, float* s,
                  int64_t lds);
  // x[0, n) * scale rounded to bf16 into dst, plus one zero when n is odd: n / 2 rounded up pairs
  // (of head dims for Q, of keys for P).
  void (*round_row)(const float* x, int64_t n, float scale, uint16_t* dst);
  // O[rows, dv] = alpha * O + P V over np pairs of keys: p rows of ldp words (pairs of keys), v
  // [np][dv] words (row j holds keys 2j and 2j + 1 of each column).
  void (*pv_block)(int64_t rows, const uint32_t* p, int64_t ldp, int64_t np, const uint32_t* v,
                   int64_t dv, const float* alpha, float* o);
};

// Requires cpu_has_avx512_bf16().
const FlashBf16Kernels& flash_kernels_bf16();

}  // namespace cuvil::runtime::cpu
