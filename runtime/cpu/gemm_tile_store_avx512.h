// A 32-column fp32 register tile's store, shared by the bf16 and int8 GEMMs' tiles: the sums of
// earlier K panels added, then on the last one the bias and the step's epilogue in lane form,
// in registers, so that C is written once. Include after target_avx512_begin.h: it is compiled
// for AVX-512 and inlined into the tiles (whose targets include AVX-512).
#pragma once

#ifndef CUVIL_AVX512_FILE
#error "gemm_tile_store_avx512.h: include only after runtime/cpu/target_avx512_begin.h"
#endif
#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/epilogue_lanes_avx512.h"

namespace cuvil::runtime::cpu::avx512 {

// What a full tile does once its K is complete, in registers before its store: bias (at the
// tile's columns) and the step's epilogue in lane form.
struct TileFinish {
  const float* bias = nullptr;             // at column `col`, or null
  const LaneEpilogue* epilogue = nullptr;  // null: none
  int64_t col = 0;                         // C's column of the tile's first lane
};

// C[R, NR] (+)= acc once the tile's K is complete: the earlier panels' sums when `accumulate`,
// then with `finish` the bias and the epilogue, in registers; one store.
template <int R>
__attribute__((always_inline)) inline void store_tile(__m512 (&acc)[R][2], float* c, int64_t ldc,
                                                      bool accumulate, const TileFinish* finish) {
  if (accumulate) {
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(c + i * ldc));
      acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(c + i * ldc + 16));
    }
  }
  if (finish && finish->bias) {
    const __m512 bias0 = _mm512_loadu_ps(finish->bias);
    const __m512 bias1 = _mm512_loadu_ps(finish->bias + 16);
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      acc[i][0] = _mm512_add_ps(acc[i][0], bias0);
      acc[i][1] = _mm512_add_ps(acc[i][1], bias1);
    }
  }
  if (finish && finish->epilogue) {
    avx512::epilogue_lanes(*finish->epilogue, acc, c, ldc, finish->col, __mmask16{0xffff});
  }
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}

}  // namespace cuvil::runtime::cpu::avx512
