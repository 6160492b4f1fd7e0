// A fused epilogue (LaneEpilogue, epilogue.h) applied to an AVX-512 register tile before it is
// stored, so that the output is written once and an operand such as a residual is read while
// the tile is in registers. Include only after runtime/cpu/target_avx512_begin.h (or in a file
// whose functions carry an AVX-512 target): the helpers sit in an unnamed namespace, so each
// file compiles its own copy for its instruction set.
#pragma once

#ifndef CUVIL_AVX512_FILE
#error "epilogue_lanes_avx512.h: include only after runtime/cpu/target_avx512_begin.h"
#endif
#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/epilogue.h"

namespace cuvil::runtime::cpu::avx512 {
namespace {

// Vector lambdas capture by reference ([&]) though they use nothing: a lambda without captures
// also gets a function-pointer conversion, which GCC compiles outside the target pragma and
// warns about (-Wpsabi) in the portable build (-DCUVIL_NATIVE=OFF).

// acc[r][v] = f(acc[r][v], operand at row r, vector v), for every register of the tile.
template <int R, int V, class F>
__attribute__((always_inline)) inline void epilogue_binary(const LaneEpilogue::Step& st,
                                                           __m512 (&acc)[R][V], int64_t at,
                                                           int64_t ld, int64_t col, __mmask16 tail,
                                                           F f) {
  switch (st.operand) {
    case LaneEpilogue::Operand::element:
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) {
          const __mmask16 m = v == V - 1 ? tail : __mmask16{0xffff};
          acc[r][v] = f(acc[r][v], _mm512_maskz_loadu_ps(m, st.src + at + r * ld + v * 16));
        }
      }
      return;
    case LaneEpilogue::Operand::column:
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        const __mmask16 m = v == V - 1 ? tail : __mmask16{0xffff};
        const __m512 x = _mm512_maskz_loadu_ps(m, st.src + col + v * 16);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r][v] = f(acc[r][v], x);
      }
      return;
    case LaneEpilogue::Operand::scalar: {
      const __m512 x = _mm512_set1_ps(*st.src);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) acc[r][v] = f(acc[r][v], x);
      }
      return;
    }
    case LaneEpilogue::Operand::none:
      return;
  }
}

template <int R, int V, class F>
__attribute__((always_inline)) inline void epilogue_unary(__m512 (&acc)[R][V], F f) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = f(acc[r][v]);
  }
}

// Applies e to the tile acc[R][V]: row r's vector v holds output elements
// [y + r * ld + 16 v, + 16), of columns col + 16 v; `tail` masks the last vector's valid lanes.
// The same arithmetic as apply_lanes(), lane for lane (NaN included).
template <int R, int V>
__attribute__((always_inline)) inline void epilogue_lanes(const LaneEpilogue& e,
                                                          __m512 (&acc)[R][V], const float* y,
                                                          int64_t ld, int64_t col, __mmask16 tail) {
  const int64_t at = y - e.out;
  for (int s = 0; s < e.count; ++s) {
    const LaneEpilogue::Step& st = e.steps[s];
    switch (st.op) {
      case ir::OpKind::relu:
        // max returns its second operand when either is NaN: NaN passes, as apply's v < 0 ? 0 : v.
        epilogue_unary(acc, [&](__m512 v) { return _mm512_max_ps(_mm512_setzero_ps(), v); });
        break;
      case ir::OpKind::clip: {
        const __m512 lo = _mm512_set1_ps(st.a), hi = _mm512_set1_ps(st.b);
        epilogue_unary(acc, [&](__m512 v) {
          const __mmask16 below = _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ);
          const __mmask16 above = _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ) & ~below;
          return _mm512_mask_blend_ps(below, _mm512_mask_blend_ps(above, v, hi), lo);
        });
        break;
      }
      case ir::OpKind::leaky_relu: {
        const __m512 alpha = _mm512_set1_ps(st.a);
        epilogue_unary(acc, [&](__m512 v) {
          const __mmask16 negative = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NGE_UQ);
          return _mm512_mask_mul_ps(v, negative, v, alpha);
        });
        break;
      }
      case ir::OpKind::add:
        epilogue_binary(st, acc, at, ld, col, tail,
                        [&](__m512 p, __m512 q) { return _mm512_add_ps(p, q); });
        break;
      case ir::OpKind::sub:
        epilogue_binary(st, acc, at, ld, col, tail,
                        [&](__m512 p, __m512 q) { return _mm512_sub_ps(p, q); });
        break;
      case ir::OpKind::mul:
        epilogue_binary(st, acc, at, ld, col, tail,
                        [&](__m512 p, __m512 q) { return _mm512_mul_ps(p, q); });
        break;
      case ir::OpKind::div:
        epilogue_binary(st, acc, at, ld, col, tail,
                        [&](__m512 p, __m512 q) { return _mm512_div_ps(p, q); });
        break;
      default:
        break;  // Epilogue::lanes() holds no other op
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime::cpu::avx512
