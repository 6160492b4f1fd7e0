// The split of C between threads that the fp32, bf16 and int8 GEMMs share (gemm_partition.h).
#include "runtime/cpu/gemm_partition.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

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

}  // namespace
}  // namespace cuvil::runtime::cpu
