// Few-row products against a transposed B (decode: linear layers with M = 1..4 rows):
// C[i, j] = sum_p A[i, p] * B[j, p] for i < m, j in [j0, j1), B stored [n, k] row-major. Bound by
// streaming B once, so B is read in place (no packing); several rows of B are read side by side
// and every row of A reuses each loaded B vector. One kernel per instruction set.
#pragma once

#include <cstdint>

#include "runtime/cpu/gemm_ukernel.h"

namespace cuvil::runtime::cpu {

inline constexpr int64_t kGemvMaxRows = 4;

using GemvFn = void (*)(int64_t m, int64_t k, const float* a, int64_t lda, const float* b,
                        int64_t ldb, float* c, int64_t ldc, int64_t j0, int64_t j1);

void gemv_bt_ref(int64_t m, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                 float* c, int64_t ldc, int64_t j0, int64_t j1);
void gemv_bt_avx2(int64_t m, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                  float* c, int64_t ldc, int64_t j0, int64_t j1);
void gemv_bt_avx512(int64_t m, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c, int64_t ldc, int64_t j0, int64_t j1);

// The kernel for this instruction set.
GemvFn pick_gemv_bt(GemmIsa isa);

}  // namespace cuvil::runtime::cpu
