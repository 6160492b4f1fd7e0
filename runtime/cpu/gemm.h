// A packed, cache-blocked single-precision GEMM (Goto/BLIS style): C = A * op(B) (+ bias),
// then the step's epilogue applied to each finished output block while it is still in cache.
// A is packed in MC x KC panels of MR-row slivers, B in KC x NC panels of NR-column slivers,
// and an MR x NR register-tile micro-kernel does the arithmetic: AVX-512, AVX2 or the plain
// reference, chosen at run time (gemm_ukernel.h). Products with at most kGemvMaxRows rows read
// B in place instead (gemv.h). Register tile, cache blocks, packing and the split between
// threads are parameters (GemmBlocking), set per step by the gemm-tiling and threading passes
// through step attributes (gemm_blocking()).
#pragma once

#include <cstdint>
#include <memory>

#include "passes/ir/graph.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/gemm_partition.h"
#include "runtime/cpu/gemm_ukernel.h"
#include "runtime/cpu/gemv.h"

namespace cuvil::runtime {
class ThreadPool;
}

namespace cuvil::runtime::cpu {

struct GemmBlocking {
  int64_t mc = 192;       // rows of A per packed panel (L2 resident); rounded up to MR
  int64_t kc = 768;       // depth per panel (longer panels amortise the C tile updates)
  int64_t nc = 3072;      // columns of B per packed panel (L3); rounded up to NR
  bool portable = false;  // use the reference micro-kernel whatever the instruction set
  int mr = 0, nr = 0;     // register tile; 0 (or a tile the instruction set lacks) = its default
  GemmPartition partition = GemmPartition::automatic;
  bool prefetch_b = true;  // micro-kernels prefetch the next B sliver into L2 where they can
};

// B packed ahead of time (constant weights, at lowering) in the layout the GEMM packs it to:
// for each KC block of rows, NR-column slivers of [kcb][NR] floats, zero-padded to n_padded
// columns. The GEMM uses it when its micro-kernel has this NR; kc then comes from the packing.
struct PackedB {
  int64_t k = 0, n = 0, kc = 0, n_padded = 0;
  int nr = 0;
  std::shared_ptr<float> data;  // 64-byte aligned
  // The sliver block of rows [pc, pc + kc) starting at column `col` (a multiple of nr).
  const float* block(int64_t pc, int64_t col) const {
    const int64_t kcb = kc < k - pc ? kc : k - pc;
    return data.get() + pc * n_padded + col / nr * kcb * nr;
  }
};
// Packs B[k, n] (row stride ldb), or B^T stored [n, k] when `transposed`, for blocking kc and
// register-tile width nr. Uses the pool's threads when given.
PackedB pack_b_ahead(const float* b, int64_t ldb, bool transposed, int64_t k, int64_t n, int64_t kc,
                     int nr, ThreadPool* pool);

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
  // Optional: B (all of it, column 0 of this problem at packed column packed_col0) prepacked.
  const PackedB* packed_b = nullptr;
  int64_t packed_col0 = 0;
};

// Whether a product with m rows takes the few-row path that reads B in place (gemv.h): its
// blocking is never used, so callers leave the step's blocking attributes unread (knob reach).
inline bool gemm_reads_in_place(int64_t m) {
  return m > 0 && m <= kGemvMaxRows;
}

// Splits C between the pool's threads; each thread packs its own panels.
void gemm(const GemmProblem& p, ThreadPool& pool);
// Runs on the calling thread with thread `tid`'s scratch (for callers that parallelise above).
void gemm_serial(const GemmProblem& p, ThreadPool& pool, int tid);

// The blocking a step's attributes ask for: "gemm.mr_nr" ("12x32"), "gemm.mc", "gemm.kc",
// "gemm.nc", "gemm.partition" (auto|m|n|2d), "gemm.prefetch_b" (0|1); absent ones keep their
// defaults. UserError on malformed values.
GemmBlocking gemm_blocking(const ir::Attrs& attrs);
// The threading pass's split of C ("gemm.partition"; automatic when absent), as every GEMM reads
// it: gemm_blocking() for fp32, the bf16 and int8 schedules (lowp_gemm_schedule.h). UserError
// when unknown.
GemmPartition gemm_partition(const ir::Attrs& attrs);

// What the last gemm()/gemm_serial() call resolved its parameters to, for tests that check a
// knob reaches the kernel. Recorded only while tracing is on.
struct GemmTrace {
  int64_t calls = 0;
  GemmIsa isa = GemmIsa::ref;
  int mr = 0, nr = 0;
  int64_t mc = 0, kc = 0, nc = 0;
  GemmPartition partition = GemmPartition::automatic;  // as resolved (never automatic)
  int parts = 1;                                       // threads that got work
  bool used_prepacked = false;
  bool few_rows = false;  // the in-place few-row path ran
};
void set_gemm_tracing(bool on);
GemmTrace last_gemm_trace();

}  // namespace cuvil::runtime::cpu
