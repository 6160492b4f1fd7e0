// How the bf16 and int8 GEMMs (gemm_bf16.cc, gemm_int8.cc) split C between threads: one strip
// per thread, cut along N (each thread streams only its B slivers) unless N is too narrow to
// give every thread a few register tiles, then along M; small products stay on the calling
// thread. One rule for both, beside their per-ISA micro-kernels.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/kernel_util.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

// Products below this many multiply-adds are not worth waking other threads for.
inline constexpr double kLowpGemmMinParallelWork = 32.0 * 32 * 64;

// Calls block(i0, i1, s0, s1, tid) over the rows [0, m) and the nr-column slivers
// [0, ceil(n / nr)) of an m x n x k product's C, rows cut at multiples of row_tile.
template <class Block>
void split_lowp_gemm(ThreadPool& pool, int64_t m, int64_t n, int64_t k, int64_t nr,
                     int64_t row_tile, Block&& block) {
  const int threads = pool.threads();
  const int64_t slivers = ceil_div(n, nr);
  const int64_t tiles_m = ceil_div(m, row_tile);
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (threads == 1 || work < kLowpGemmMinParallelWork || (tiles_m < 2 && slivers < 2)) {
    block(int64_t{0}, m, int64_t{0}, slivers, pool.current_thread());
    return;
  }
  const bool split_n = slivers >= 4 * threads || slivers >= tiles_m;
  const int64_t tiles = split_n ? slivers : tiles_m;
  const int64_t parts = std::min<int64_t>(threads, tiles);
  pool.parallel_for_tid(parts, [&](int tid, int64_t p0, int64_t p1) {
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t t0 = tiles * part / parts, t1 = tiles * (part + 1) / parts;
      if (split_n) {
        block(int64_t{0}, m, t0, t1, tid);
      } else {
        block(t0 * row_tile, std::min(m, t1 * row_tile), int64_t{0}, slivers, tid);
      }
    }
  });
}

}  // namespace cuvil::runtime::cpu
