// How every CPU GEMM (f32, bf16, int8) splits C between threads: a pm x pn grid of blocks, one
// per thread, cut on register-tile bounds. The automatic rule cuts along N (each thread packs or
// streams only its own B columns) unless N is too narrow to give every thread a few register
// tiles, then along M; where B was packed before the product (bf16), tall products and those
// whose B fits a core's cache cut along M (each thread packs only its rows of A); small products
// stay on the calling thread. One rule for all precisions, beside their per-precision loops
// (gemm_loops.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/cpu/kernel_util.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

// How a GEMM splits C between threads (the threading pass's `partition`).
enum class GemmPartition : uint8_t {
  automatic,  // along N when it has enough register tiles per thread, else along M
  m,          // row strips (each thread packs all of B it uses, shares nothing)
  n,          // column strips (each thread packs only its columns of B)
  grid,       // a pm x pn grid of blocks, pm * pn = threads, least packing per thread
};
const char* to_string(GemmPartition partition);
GemmPartition parse_gemm_partition(const std::string& name);  // UserError if unknown

// Strips of fewer register tiles than this per thread balance badly (one edge tile is a large
// share of the work).
inline constexpr int64_t kGemmMinTilesPerThread = 4;

// B packed before the product that every thread may read whole when A is cut along M: about a
// core's L2 (1 MiB on the Zen 5 class EPYC, 2 MiB on Sapphire Rapids). ResNet-50's layer3 1x1
// 256 -> 1024 convolutions (196 rows, 512 KiB of bf16 B) and its downsample ran 3-6% faster cut
// along M than along N, where each thread packed all of A (--probes ops, docs/performance.md).
inline constexpr double kGemmSharedPackedBBytes = 1 << 20;

// Products below this many multiply-adds are not worth waking other threads for.
inline constexpr double kGemmMinParallelWork = 32.0 * 32 * 64;

// The grid one product is cut into.
struct GemmSplit {
  int64_t pm = 1, pn = 1;  // blocks along M and N; pm * pn parts, each on one thread
  int64_t tiles_m = 0, tiles_n = 0;
  int mr = 1, nr = 1;  // register tile the cuts fall on
  // The partition the grid amounts to (never automatic): n for a single block.
  GemmPartition resolved() const {
    return pm > 1 && pn > 1 ? GemmPartition::grid : pm > 1 ? GemmPartition::m : GemmPartition::n;
  }
  int64_t parts() const { return pm * pn; }
};

// Where B comes from: packed by each thread for its own columns (fp32), or packed before the
// product (bf16: weights at lowering, a matmul's B once per product), so that a thread packs
// only its rows of A.
enum class GemmBPacking : uint8_t { per_thread, before };

inline GemmSplit plan_gemm_split(int threads, int64_t m, int64_t n, int64_t k, int mr, int nr,
                                 GemmPartition partition,
                                 GemmBPacking b_packing = GemmBPacking::per_thread) {
  GemmSplit s;
  s.mr = mr, s.nr = nr;
  s.tiles_m = ceil_div(m, mr);
  s.tiles_n = ceil_div(n, nr);
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (threads <= 1 || work < kGemmMinParallelWork || (s.tiles_m < 2 && s.tiles_n < 2)) return s;
  switch (partition) {
    case GemmPartition::automatic:
      if (b_packing == GemmBPacking::before && s.tiles_m >= kGemmMinTilesPerThread * threads &&
          (2 * m >= n ||
           2.0 * static_cast<double>(k) * static_cast<double>(n) <= kGemmSharedPackedBBytes)) {
        // B packed already (bf16, 2 bytes an element): with N strips every thread would pack all
        // of A (an fp32 element converted per K step), with M strips each packs its own rows and
        // reads all of B (a packed element per K step, from cache once the other thread brought
        // it in; B that fits a core's cache is cheap to read twice however wide).
        s.pm = threads;
      } else if (s.tiles_n >= kGemmMinTilesPerThread * threads || s.tiles_n >= s.tiles_m) {
        s.pn = threads;
      } else {
        s.pm = threads;
      }
      break;
    case GemmPartition::m:
      s.pm = threads;
      break;
    case GemmPartition::n:
      s.pn = threads;
      break;
    case GemmPartition::grid: {
      // Each thread packs (m / pm) x k of A and k x (n / pn) of B: take the factorisation of
      // `threads` that packs least.
      double best = -1;
      for (int64_t f = 1; f <= threads; ++f) {
        if (threads % f != 0) continue;
        const double cost = static_cast<double>(m) / f + static_cast<double>(n) * f / threads;
        if (best < 0 || cost < best) best = cost, s.pm = f, s.pn = threads / f;
      }
      break;
    }
  }
  s.pm = std::min(s.pm, s.tiles_m);
  s.pn = std::min(s.pn, s.tiles_n);
  return s;
}

// Calls block(i0, i1, j0, j1, tid) for each part of the split of an m x n product's C: rows
// [i0, i1) and columns [j0, j1), i0 and j0 on register-tile bounds. A single part runs on the
// calling thread. Strips are a balanced loop over register tiles (the pool may move their
// bounds toward equal times); a grid's blocks are static.
template <class Block>
void run_gemm_split(ThreadPool& pool, const GemmSplit& s, int64_t m, int64_t n, Block&& block) {
  if (s.parts() == 1) {
    block(int64_t{0}, m, int64_t{0}, n, pool.current_thread());
    return;
  }
  if (s.pm == 1 || s.pn == 1) {
    const bool rows = s.pm > 1;
    pool.parallel_for_balanced(rows ? s.tiles_m : s.tiles_n, [&](int tid, int64_t t0, int64_t t1) {
      if (rows) {
        block(std::min(m, t0 * s.mr), std::min(m, t1 * s.mr), int64_t{0}, n, tid);
      } else {
        block(int64_t{0}, m, std::min(n, t0 * s.nr), std::min(n, t1 * s.nr), tid);
      }
    });
    return;
  }
  pool.parallel_for_tid(s.parts(), [&](int tid, int64_t p0, int64_t p1) {
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t bi = part / s.pn, bj = part % s.pn;
      const int64_t i0 = std::min(m, s.tiles_m * bi / s.pm * s.mr);
      const int64_t i1 = std::min(m, s.tiles_m * (bi + 1) / s.pm * s.mr);
      const int64_t j0 = std::min(n, s.tiles_n * bj / s.pn * s.nr);
      const int64_t j1 = std::min(n, s.tiles_n * (bj + 1) / s.pn * s.nr);
      if (i1 > i0 && j1 > j0) block(i0, i1, j0, j1, tid);
    }
  });
}

}  // namespace cuvil::runtime::cpu
