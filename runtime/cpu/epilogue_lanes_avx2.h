// A fused epilogue (LaneEpilogue, epilogue.h) applied to AVX2 registers before they are stored:
// the twin of epilogue_lanes_avx512.h for tiles of 8-lane vectors. Include only after
// runtime/cpu/target_avx2_begin.h (unnamed namespace: each file compiles its own copy).
#pragma once

#ifndef CUVIL_AVX2_FILE
#error "epilogue_lanes_avx2.h: include only after runtime/cpu/target_avx2_begin.h"
#endif
#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/epilogue.h"

namespace cuvil::runtime::cpu::avx2 {
namespace {

// Vector lambdas capture by reference ([&]) though they use nothing: a lambda without captures
// also gets a function-pointer conversion, which GCC compiles outside the target pragma and
// warns about (-Wpsabi) in the portable build (-DCUVIL_NATIVE=OFF).

// acc[r] = f(acc[r], operand of row r), for a column of R registers.
template <int R, class F>
__attribute__((always_inline)) inline void epilogue_binary(const LaneEpilogue::Step& st,
                                                           __m256 (&acc)[R], int64_t at, int64_t ld,
                                                           int64_t col, __m256i mask, F f) {
  switch (st.operand) {
    case LaneEpilogue::Operand::element:
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r)
        acc[r] = f(acc[r], _mm256_maskload_ps(st.src + at + r * ld, mask));
      return;
    case LaneEpilogue::Operand::column: {
      const __m256 x = _mm256_maskload_ps(st.src + col, mask);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[r] = f(acc[r], x);
      return;
    }
    case LaneEpilogue::Operand::scalar: {
      const __m256 x = _mm256_set1_ps(*st.src);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[r] = f(acc[r], x);
      return;
    }
    case LaneEpilogue::Operand::none:
      return;
  }
}

template <int R, class F>
__attribute__((always_inline)) inline void epilogue_unary(__m256 (&acc)[R], F f) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r] = f(acc[r]);
}

// Applies e to a column of registers acc[R]: acc[r] holds output elements [y + r * ld, + 8), of
// columns [col, col + 8); `mask` marks the valid lanes. The arithmetic of apply_lanes(), lane for
// lane (NaN included).
template <int R>
__attribute__((always_inline)) inline void epilogue_lanes(const LaneEpilogue& e, __m256 (&acc)[R],
                                                          const float* y, int64_t ld, int64_t col,
                                                          __m256i mask) {
  const int64_t at = y - e.out;
  for (int s = 0; s < e.count; ++s) {
    const LaneEpilogue::Step& st = e.steps[s];
    switch (st.op) {
      case ir::OpKind::relu:
        // max returns its second operand when either is NaN: NaN passes, as apply's v < 0 ? 0 : v.
        epilogue_unary(acc, [&](__m256 v) { return _mm256_max_ps(_mm256_setzero_ps(), v); });
        break;
      case ir::OpKind::clip: {
        const __m256 lo = _mm256_set1_ps(st.a), hi = _mm256_set1_ps(st.b);
        epilogue_unary(acc, [&](__m256 v) {
          const __m256 below = _mm256_cmp_ps(v, lo, _CMP_LT_OQ);
          const __m256 above = _mm256_andnot_ps(below, _mm256_cmp_ps(v, hi, _CMP_GT_OQ));
          return _mm256_blendv_ps(_mm256_blendv_ps(v, hi, above), lo, below);
        });
        break;
      }
      case ir::OpKind::leaky_relu: {
        const __m256 alpha = _mm256_set1_ps(st.a);
        epilogue_unary(acc, [&](__m256 v) {
          const __m256 negative = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_NGE_UQ);
          return _mm256_blendv_ps(v, _mm256_mul_ps(v, alpha), negative);
        });
        break;
      }
      case ir::OpKind::add:
        epilogue_binary(st, acc, at, ld, col, mask,
                        [&](__m256 p, __m256 q) { return _mm256_add_ps(p, q); });
        break;
      case ir::OpKind::sub:
        epilogue_binary(st, acc, at, ld, col, mask,
                        [&](__m256 p, __m256 q) { return _mm256_sub_ps(p, q); });
        break;
      case ir::OpKind::mul:
        epilogue_binary(st, acc, at, ld, col, mask,
                        [&](__m256 p, __m256 q) { return _mm256_mul_ps(p, q); });
        break;
      case ir::OpKind::div:
        epilogue_binary(st, acc, at, ld, col, mask,
                        [&](__m256 p, __m256 q) { return _mm256_div_ps(p, q); });
        break;
      default:
        break;  // Epilogue::lanes() holds no other op
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime::cpu::avx2
