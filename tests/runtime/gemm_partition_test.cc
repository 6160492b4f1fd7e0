// The split of C between threads that the fp32, bf16 and int8 GEMMs share (gemm_partition.h).
#include "runtime/cpu/gemm_partition.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/cpu/gemm.h"
#include "runtime/cpu/gemm_ukernel.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {
namespace {

TEST(GemmSplit, SmallProductsStayOnOneThread) {
  const GemmSplit s = plan_gemm_split(4, 8, 8, 8, 12, 32, GemmPartition::grid);
  EXPECT_EQ(s.parts(), 1);
  EXPECT_EQ(s.resolved(), GemmPartition::n);
}

TEST(GemmSplit, OneThreadIsOnePart) {
  EXPECT_EQ(plan_gemm_split(1, 4096, 4096, 4096, 12, 32, GemmPartition::m).parts(), 1);
}

TEST(GemmSplit, AutomaticCutsAlongNWhenItHasTilesForEveryThread) {
  const GemmSplit wide = plan_gemm_split(2, 512, 4096, 512, 12, 32, GemmPartition::automatic);
  EXPECT_EQ(wide.pn, 2);
  EXPECT_EQ(wide.pm, 1);
  EXPECT_EQ(wide.resolved(), GemmPartition::n);
  // 3 column tiles against 43 row tiles: along M.
  const GemmSplit narrow = plan_gemm_split(2, 512, 96, 512, 12, 32, GemmPartition::automatic);
  EXPECT_EQ(narrow.pm, 2);
  EXPECT_EQ(narrow.pn, 1);
  EXPECT_EQ(narrow.resolved(), GemmPartition::m);
}

// With B packed before the product (bf16) a thread packs only A: tall products, and products
// whose B fits a core's cache, cut along M so that each packs half of it; few row tiles, or N
// much wider than M with a large B, still cut along N.
TEST(GemmSplit, PackedBCutsTallProductsAlongM) {
  const auto automatic = GemmPartition::automatic;
  const auto before = GemmBPacking::before;
  // ResNet-50's 1x1 64 -> 256 at 56 x 56: along N when each thread packs its B, M when B is packed.
  EXPECT_EQ(plan_gemm_split(2, 3136, 256, 64, 12, 32, automatic).resolved(), GemmPartition::n);
  EXPECT_EQ(plan_gemm_split(2, 3136, 256, 64, 12, 32, automatic, before).resolved(),
            GemmPartition::m);
  // 7 x 7 pixels are 5 row tiles: too few to share.
  EXPECT_EQ(plan_gemm_split(2, 49, 512, 4608, 12, 32, automatic, before).resolved(),
            GemmPartition::n);
  // A prefill's 128 rows against 4096 columns: 32 MiB of B.
  EXPECT_EQ(plan_gemm_split(2, 128, 4096, 4096, 12, 32, automatic, before).resolved(),
            GemmPartition::n);
  // layer3's 1x1 256 -> 1024 at 14 x 14: N five times M, but B (512 KiB) fits a core's cache;
  // the same shape with 4 MiB of B (K = 2048) cuts along N.
  EXPECT_EQ(plan_gemm_split(2, 196, 1024, 256, 12, 32, automatic, before).resolved(),
            GemmPartition::m);
  EXPECT_EQ(plan_gemm_split(2, 196, 1024, 2048, 12, 32, automatic, before).resolved(),
            GemmPartition::n);
  // An explicit partition is kept.
  EXPECT_EQ(plan_gemm_split(2, 3136, 256, 64, 12, 32, GemmPartition::n, before).resolved(),
            GemmPartition::n);
}

TEST(GemmSplit, GridTakesTheFactorisationThatPacksLeast) {
  const GemmSplit s = plan_gemm_split(4, 1000, 1000, 256, 12, 32, GemmPartition::grid);
  EXPECT_EQ(s.pm, 2);
  EXPECT_EQ(s.pn, 2);
  EXPECT_EQ(s.resolved(), GemmPartition::grid);
}

TEST(GemmSplit, NeverMorePartsThanTiles) {
  const GemmSplit s = plan_gemm_split(8, 1000, 64, 256, 12, 32, GemmPartition::n);
  EXPECT_EQ(s.pn, 2);  // 64 columns are two tiles of 32
  EXPECT_EQ(s.pm, 1);
}

// Every element of C in exactly one part, parts on register-tile bounds, at odd sizes.
TEST(GemmSplit, PartsCoverCOnceOnTileBounds) {
  ThreadPool pool(3);
  for (GemmPartition partition :
       {GemmPartition::automatic, GemmPartition::m, GemmPartition::n, GemmPartition::grid}) {
    for (int threads : {1, 2, 3, 4, 7}) {
      for (int64_t m : {1, 3, 17, 100}) {
        for (int64_t n : {1, 7, 33, 300}) {
          const int mr = 12, nr = 32;
          const GemmSplit s = plan_gemm_split(threads, m, n, 512, mr, nr, partition);
          EXPECT_LE(s.parts(), threads);
          std::vector<int> covered(static_cast<size_t>(m * n), 0);
          std::mutex mu;
          run_gemm_split(pool, s, m, n, [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, int) {
            EXPECT_EQ(i0 % mr, 0);
            EXPECT_EQ(j0 % nr, 0);
            std::lock_guard<std::mutex> lock(mu);
            for (int64_t i = i0; i < i1; ++i)
              for (int64_t j = j0; j < j1; ++j) ++covered[i * n + j];
          });
          for (int c : covered) ASSERT_EQ(c, 1) << to_string(partition) << " " << m << "x" << n;
        }
      }
    }
  }
}

// A pool whose balanced loop of n units, the first of step 0, gives thread 1 one unit: what a
// measured balance learns when thread 1's core is shared (each of its units sleeps 2 ms).
std::unique_ptr<ThreadPool> pool_skewed_for(int64_t n) {
  auto pool = std::make_unique<ThreadPool>(2, ThreadPool::kDefaultSpinUs, ThreadRuntime::pool,
                                           LoopBalance::measured);
  for (int run = 0; run < 40; ++run) {
    pool->begin_step(0);
    pool->parallel_for_balanced(n, [&](int tid, int64_t b, int64_t e) {
      std::this_thread::sleep_for(std::chrono::microseconds((e - b) * (tid == 0 ? 20 : 2000)));
    });
  }
  pool->begin_step(0);
  return pool;
}

// Strips whose bounds a measured balance moved still cover C once, on register-tile bounds, and
// the fp32 GEMM gives the same bits as with equal strips (each element is one thread's sum).
TEST(GemmSplit, MovedStripsCoverCOnceAndKeepTheBits) {
  const int64_t m = 9, n = 300, k = 37;  // more rows than the few-row path (gemv.h) takes
  const MicroKernel& micro = pick_micro_kernel(active_gemm_isa(), 12, 32);
  const GemmSplit s = plan_gemm_split(2, m, n, k, micro.mr, micro.nr, GemmPartition::n);
  ASSERT_EQ(s.resolved(), GemmPartition::n);
  std::unique_ptr<ThreadPool> skewed = pool_skewed_for(s.tiles_n);
  std::vector<int> covered(static_cast<size_t>(m * n), 0);
  std::mutex mu;
  int64_t thread_1_columns = 0;
  run_gemm_split(*skewed, s, m, n, [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, int tid) {
    EXPECT_EQ(j0 % micro.nr, 0);
    std::lock_guard<std::mutex> lock(mu);
    if (tid == 1) thread_1_columns = j1 - j0;
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j) ++covered[i * n + j];
  });
  for (int c : covered) ASSERT_EQ(c, 1);
  EXPECT_EQ(thread_1_columns, n - (s.tiles_n - 1) * micro.nr);  // the last tile: the cuts moved

  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 53) % 97) / 48.0f - 1;
  auto product = [&](ThreadPool& pool) {
    std::vector<float> c(static_cast<size_t>(m * n));
    GemmProblem p;
    p.m = m, p.n = n, p.k = k, p.a = a.data(), p.lda = k, p.b = b.data(), p.ldb = n;
    p.c = c.data(), p.ldc = n;
    p.blocking.partition = GemmPartition::n;
    p.blocking.mr = micro.mr, p.blocking.nr = micro.nr;
    gemm(p, pool);
    return c;
  };
  ThreadPool equal(2);
  EXPECT_EQ(product(*pool_skewed_for(s.tiles_n)), product(equal));
}

}  // namespace
}  // namespace cuvil::runtime::cpu
