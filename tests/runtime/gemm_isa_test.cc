// Every micro-kernel this CPU can run, against the reference micro-kernel of the same tile and
// through the whole GEMM at odd sizes; instruction-set selection and its must-fail cases.
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "passes/ir/tensor.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/gemm_ukernel.h"
#include "runtime/cpu/gemv.h"
#include "runtime/thread_pool.h"
#include "tests/runtime/isa_sweep.h"
#include "tests/runtime/random_data.h"

namespace cuvil::runtime::cpu {
namespace {

// 64-byte aligned copy (micro-kernels load B slivers aligned).
struct Aligned {
  explicit Aligned(const std::vector<float>& v)
      : data(static_cast<float*>(std::aligned_alloc(64, (v.size() * 4 + 63) / 64 * 64 + 64))) {
    std::copy(v.begin(), v.end(), data);
  }
  ~Aligned() { std::free(data); }
  float* data;
};

using testing::available_isas;

// Restores the instruction set chosen at start-up when a test ends.
class GemmIsaTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = active_gemm_isa(); }
  void TearDown() override { set_gemm_isa(saved_); }
  GemmIsa saved_ = GemmIsa::ref;
};

ir::Tensor naive(int64_t m, int64_t n, int64_t k, const std::vector<float>& a,
                 const std::vector<float>& bt) {
  ir::Tensor out({m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += static_cast<double>(a[i * k + p]) * bt[j * k + p];
      out.data[i * n + j] = static_cast<float>(acc);
    }
  }
  return out;
}

double run_gemm(int64_t m, int64_t n, int64_t k, GemmBlocking blocking, int threads,
                bool prepack = false) {
  const auto a = testing::normal_vector(m * k, 11);
  const auto bt = testing::normal_vector(n * k, 12);
  ir::Tensor out({m, n});
  ThreadPool pool(threads);
  GemmProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a = a.data(), p.lda = k;
  p.b = bt.data(), p.ldb = k, p.b_transposed = true;
  p.c = out.data.data(), p.ldc = n;
  p.blocking = blocking;
  PackedB packed;
  if (prepack) {
    const MicroKernel& mk = pick_micro_kernel(active_gemm_isa(), blocking.mr, blocking.nr);
    packed = pack_b_ahead(bt.data(), k, true, k, n, blocking.kc, mk.nr, &pool);
    p.packed_b = &packed;
  }
  gemm(p, pool);
  return ir::max_relative_error(out, naive(m, n, k, a, bt));
}

TEST(GemmUkernel, EveryAvailableKernelMatchesTheReferenceOfItsTile) {
  for (GemmIsa isa : available_isas()) {
    for (const MicroKernel& mk : micro_kernels(isa)) {
      const MicroKernel& ref = pick_micro_kernel(GemmIsa::ref, mk.mr, mk.nr);
      ASSERT_EQ(ref.mr, mk.mr);
      ASSERT_EQ(ref.nr, mk.nr);
      for (int64_t kc : {1, 3, 17}) {
        const Aligned a(testing::normal_vector(kc * mk.mr, 1));
        const Aligned b(testing::normal_vector(kc * mk.nr, 2));
        const int64_t ldc = mk.nr + 5;
        for (bool accumulate : {false, true}) {
          std::vector<float> got = testing::normal_vector(mk.mr * ldc, 3);
          std::vector<float> want = got;
          mk.fn(kc, a.data, b.data, got.data(), ldc, accumulate);
          ref.fn(kc, a.data, b.data, want.data(), ldc, accumulate);
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::abs(want[i])))
                << to_string(isa) << " " << mk.mr << "x" << mk.nr << " kc=" << kc << " i=" << i;
          }
        }
      }
    }
  }
}

// An edge kernel writes C[0, m) x [0, n) as the full kernel would and leaves the rest alone.
TEST(GemmUkernel, EdgeKernelsWriteOnlyTheirRowsAndColumns) {
  for (GemmIsa isa : available_isas()) {
    for (const MicroKernel& mk : micro_kernels(isa)) {
      if (!mk.edge) continue;
      const int64_t kc = 13, ldc = mk.nr + 3;
      const Aligned a(testing::normal_vector(kc * mk.mr, 1));
      const Aligned b(testing::normal_vector(kc * mk.nr, 2));
      for (int m : {1, 3, mk.mr - 1, mk.mr}) {
        for (int n : {1, 7, 16, 17, mk.nr - 1, mk.nr}) {
          for (bool accumulate : {false, true}) {
            const std::vector<float> before = testing::normal_vector(mk.mr * ldc, 3);
            std::vector<float> full = before, got = before;
            mk.fn(kc, a.data, b.data, full.data(), ldc, accumulate);
            mk.edge(kc, a.data, b.data, got.data(), ldc, accumulate, m, n);
            for (int64_t i = 0; i < mk.mr; ++i) {
              for (int64_t j = 0; j < ldc; ++j) {
                const size_t at = static_cast<size_t>(i * ldc + j);
                const float want = i < m && j < n ? full[at] : before[at];
                ASSERT_EQ(got[at], want) << to_string(isa) << " " << mk.mr << "x" << mk.nr
                                         << " m=" << m << " n=" << n << " at " << i << "," << j;
              }
            }
          }
        }
      }
    }
  }
}

TEST_F(GemmIsaTest, EveryKernelThroughTheGemmAtOddEdgeTiles) {
  for (GemmIsa isa : available_isas()) {
    set_gemm_isa(isa);
    for (const MicroKernel& mk : micro_kernels(isa)) {
      GemmBlocking blocking;
      blocking.mr = mk.mr, blocking.nr = mk.nr;
      blocking.mc = 2 * mk.mr, blocking.kc = 7, blocking.nc = 2 * mk.nr;
      for (int64_t m : {int64_t{5}, int64_t{mk.mr + 1}, int64_t{2 * mk.mr + 3}}) {
        for (int64_t n : {int64_t{1}, int64_t{mk.nr - 1}, int64_t{2 * mk.nr + 7}}) {
          ASSERT_LT(run_gemm(m, n, 17, blocking, 1), 1e-4)
              << to_string(isa) << " " << mk.mr << "x" << mk.nr << " m=" << m << " n=" << n;
        }
      }
    }
  }
}

TEST_F(GemmIsaTest, EveryGemvMatchesTheReference) {
  for (GemmIsa isa : available_isas()) {
    const GemvFn gemv = pick_gemv_bt(isa);
    for (int64_t m = 1; m <= 5; ++m) {
      for (int64_t k : {1, 7, 16, 33}) {
        const int64_t n = 19;
        const auto a = testing::normal_vector(m * k, 4);
        const auto b = testing::normal_vector(n * k, 5);
        std::vector<float> got(m * n, -1.0f), want(m * n, -1.0f);
        gemv(m, k, a.data(), k, b.data(), k, got.data(), n, 2, n);
        gemv_bt_ref(m, k, a.data(), k, b.data(), k, want.data(), n, 2, n);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::abs(want[i])))
              << to_string(isa) << " m=" << m << " k=" << k;
        }
      }
    }
  }
}

TEST_F(GemmIsaTest, PrepackedWeightsMatchAtEveryTile) {
  for (GemmIsa isa : available_isas()) {
    set_gemm_isa(isa);
    for (const MicroKernel& mk : micro_kernels(isa)) {
      GemmBlocking blocking;
      blocking.mr = mk.mr, blocking.nr = mk.nr, blocking.kc = 13, blocking.nc = mk.nr * 3;
      set_gemm_tracing(true);
      ASSERT_LT(run_gemm(23, 2 * mk.nr + 5, 41, blocking, 2, true), 1e-4) << to_string(isa);
      EXPECT_TRUE(last_gemm_trace().used_prepacked);
      EXPECT_EQ(last_gemm_trace().kc, 13);
      set_gemm_tracing(false);
    }
  }
}

TEST_F(GemmIsaTest, TraceReportsTheChosenKernelAndBlocks) {
  set_gemm_isa(GemmIsa::ref);
  GemmBlocking blocking;
  blocking.mr = 6, blocking.nr = 64, blocking.mc = 13, blocking.kc = 9, blocking.nc = 65;
  set_gemm_tracing(true);
  ASSERT_LT(run_gemm(31, 70, 20, blocking, 1), 1e-4);
  const GemmTrace t = last_gemm_trace();
  set_gemm_tracing(false);
  EXPECT_EQ(t.isa, GemmIsa::ref);
  EXPECT_EQ(t.mr, 6);
  EXPECT_EQ(t.nr, 64);
  EXPECT_EQ(t.mc, 18);   // rounded up to MR
  EXPECT_EQ(t.nc, 128);  // rounded up to NR
  EXPECT_EQ(t.kc, 9);
}

TEST_F(GemmIsaTest, UnknownTileFallsBackToTheDefaultOfTheInstructionSet) {
  for (GemmIsa isa : available_isas()) {
    const MicroKernel& k = pick_micro_kernel(isa, 3, 5);
    EXPECT_EQ(&k, &micro_kernels(isa).front()) << to_string(isa);
  }
}

TEST_F(GemmIsaTest, EveryPartitionSplitsCorrectly) {
  for (GemmPartition part :
       {GemmPartition::automatic, GemmPartition::m, GemmPartition::n, GemmPartition::grid}) {
    for (int threads : {2, 3}) {
      GemmBlocking blocking;
      blocking.partition = part;
      set_gemm_tracing(true);
      ASSERT_LT(run_gemm(97, 131, 29, blocking, threads), 1e-4) << to_string(part);
      const GemmTrace t = last_gemm_trace();
      set_gemm_tracing(false);
      if (part == GemmPartition::m) {
        EXPECT_EQ(t.partition, GemmPartition::m);
      }
      if (part == GemmPartition::n) {
        EXPECT_EQ(t.partition, GemmPartition::n);
      }
      EXPECT_EQ(t.parts, threads) << to_string(part);
    }
  }
}

TEST(GemmIsaSelection, ParsesNamesAndRejectsUnknownOnes) {
  EXPECT_EQ(parse_gemm_isa("ref"), GemmIsa::ref);
  EXPECT_EQ(parse_gemm_isa("avx2"), GemmIsa::avx2);
  EXPECT_EQ(parse_gemm_isa("avx512"), GemmIsa::avx512);
  EXPECT_THROW(parse_gemm_isa("sse9"), UserError);
  EXPECT_THROW(parse_gemm_partition("diagonal"), UserError);
}

TEST(GemmIsaSelection, ActiveIsaIsSupported) {
  EXPECT_TRUE(cpu_supports(active_gemm_isa()));
  EXPECT_TRUE(cpu_supports(GemmIsa::ref));
}

TEST(GemmBlockingAttrs, ReadsEveryKnobAndRejectsMalformedOnes) {
  ir::Attrs attrs;
  attrs.set("gemm.mr_nr", std::string("8x32"));
  attrs.set("gemm.mc", int64_t{96});
  attrs.set("gemm.kc", int64_t{128});
  attrs.set("gemm.nc", int64_t{512});
  attrs.set("gemm.partition", std::string("2d"));
  const GemmBlocking b = gemm_blocking(attrs);
  EXPECT_EQ(b.mr, 8);
  EXPECT_EQ(b.nr, 32);
  EXPECT_EQ(b.mc, 96);
  EXPECT_EQ(b.kc, 128);
  EXPECT_EQ(b.nc, 512);
  EXPECT_EQ(b.partition, GemmPartition::grid);
  ir::Attrs bad_tile;
  bad_tile.set("gemm.mr_nr", std::string("12by32"));
  EXPECT_THROW(gemm_blocking(bad_tile), UserError);
  ir::Attrs bad_kc;
  bad_kc.set("gemm.kc", int64_t{0});
  EXPECT_THROW(gemm_blocking(bad_kc), UserError);
}

}  // namespace
}  // namespace cuvil::runtime::cpu
