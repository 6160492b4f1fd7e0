// A 16 x 16 transpose of 32-bit lanes in AVX-512 registers, for the GEMMs that pack A into
// MR-row slivers of K units (bf16 pairs, int8 quads): 16 units of up to 16 rows are loaded as rows
// and stored as the sliver's columns, without a scatter. Include only after
// runtime/cpu/target_avx512_begin.h (unnamed namespace: each file compiles its own copy).
#pragma once

#ifndef CUVIL_AVX512_FILE
#error "transpose_avx512.h: include only after runtime/cpu/target_avx512_begin.h"
#endif
#include <immintrin.h>

namespace cuvil::runtime::cpu::avx512 {
namespace {

// r[i] lane j <- r[j] lane i.
__attribute__((always_inline)) inline void transpose16x16_epi32(__m512i (&r)[16]) {
  __m512i t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // Within each 128-bit lane L: u[4q + j] holds column 4L + j of rows 4q .. 4q + 3.
  __m512i u[16];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    u[4 * q] = _mm512_unpacklo_epi64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 1] = _mm512_unpackhi_epi64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 2] = _mm512_unpacklo_epi64(t[4 * q + 1], t[4 * q + 3]);
    u[4 * q + 3] = _mm512_unpackhi_epi64(t[4 * q + 1], t[4 * q + 3]);
  }
  // Gather lane L of u[j], u[4 + j], u[8 + j], u[12 + j]: column 4L + j of all 16 rows.
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512i even_lo = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
    const __m512i odd_lo = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xdd);
    const __m512i even_hi = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
    const __m512i odd_hi = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xdd);
    r[j] = _mm512_shuffle_i32x4(even_lo, even_hi, 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(even_lo, even_hi, 0xdd);
    r[4 + j] = _mm512_shuffle_i32x4(odd_lo, odd_hi, 0x88);
    r[12 + j] = _mm512_shuffle_i32x4(odd_lo, odd_hi, 0xdd);
  }
}

}  // namespace
}  // namespace cuvil::runtime::cpu::avx512
