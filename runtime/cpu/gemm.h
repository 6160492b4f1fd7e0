// A packed, cache-blocked single-precision GEMM (Goto/BLIS style): C = A * op(B) (+ bias),
// then the step's epilogue applied to each finished output block while it is still in cache.
// A is packed in MC x KC panels of MR-row slivers, B in KC x NC panels of NR-column slivers,
// and an MR x NR register-tile micro-kernel (AVX-512 when available) does the arithmetic.
#pragma once

#include <cstdint>

#include "runtime/cpu/epilogue.h"

namespace cuvil::runtime {
class ThreadPool;
}

namespace cuvil::runtime::cpu {

// The register tile is fixed by the micro-kernel; the cache blocks are parameters.
inline constexpr int kGemmMR = 12;
inline constexpr int kGemmNR = 32;

struct GemmBlocking {
  int64_t mc = 192;       // rows of A per packed panel (L2 resident); rounded up to MR
  int64_t kc = 256;       // depth per panel (a B sliver KC x NR stays in L1)
  int64_t nc = 3072;      // columns of B per packed panel (L3); rounded up to NR
  bool portable = false;  // use the plain C++ micro-kernel (the reference for the vector one)
};

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  // A[m, k], row stride lda
  int64_t lda = 0;
  const float* b = nullptr;  // B[k, n] row stride ldb, or (b_transposed) B^T stored as [n, k]
  int64_t ldb = 0;
  bool b_transposed = false;
  float* c = nullptr;  // C[m, n], row stride ldc; overwritten
  int64_t ldc = 0;
  const float* bias = nullptr;  // bias[n] added per column, or bias[m] per row
  bool bias_per_row = false;
  const Epilogue* epilogue = nullptr;  // applied to C's rows (C must lie in its output)
  GemmBlocking blocking;
};

// Splits C between the pool's threads; each thread packs its own panels.
void gemm(const GemmProblem& p, ThreadPool& pool);
// Runs on the calling thread with thread `tid`'s scratch (for callers that parallelise above).
void gemm_serial(const GemmProblem& p, ThreadPool& pool, int tid);

}  // namespace cuvil::runtime::cpu
