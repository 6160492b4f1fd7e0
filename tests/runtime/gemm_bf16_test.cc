#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "passes/ir/tensor.h"
#include "runtime/cpu/attrs.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/gemm_bf16.h"
#include "runtime/thread_pool.h"
#include "tests/runtime/conv_kernel_support.h"
#include "tests/runtime/conv_test_graphs.h"
#include "tests/runtime/random_data.h"

namespace cuvil::runtime::cpu {
namespace {

// C = A B (+ bias) in fp64; B is [k, n], or B^T stored [n, k] when transposed.
ir::Tensor naive(int64_t m, int64_t n, int64_t k, const std::vector<float>& a,
                 const std::vector<float>& b, bool transposed, const float* bias) {
  ir::Tensor out({m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int64_t p = 0; p < k; ++p) {
        acc += static_cast<double>(a[i * k + p]) * (transposed ? b[j * k + p] : b[p * n + j]);
      }
      out.data[static_cast<size_t>(i * n + j)] = static_cast<float>(acc);
    }
  }
  return out;
}

// C = A B (+ bias) by gemm_bf16 on B packed here.
ir::Tensor bf16_product(int64_t m, int64_t n, int64_t k, const std::vector<float>& a,
                        const std::vector<float>& b, bool transposed, const float* bias,
                        const Bf16Blocking& blocking, int threads) {
  AlignedArray<uint32_t> packed(bf16_packed_words(k, n));
  pack_b_bf16(b.data(), transposed ? k : n, transposed, k, n, packed.data());
  ThreadPool pool(threads);
  ir::Tensor c({m, n});
  Bf16Gemm g;
  g.m = m, g.n = n, g.k = k;
  g.a = a.data(), g.lda = k;
  g.b = packed.data();
  g.c = c.data.data(), g.ldc = n;
  g.bias = bias;
  g.blocking = blocking;
  gemm_bf16(g, pool);
  return c;
}

double bf16_error(int64_t m, int64_t n, int64_t k, bool transposed, bool bias,
                  Bf16Blocking blocking = {}, int threads = 2) {
  const auto a = testing::uniform_vector(m * k, 1);
  const auto b = testing::uniform_vector(k * n, 2);
  const auto bv = testing::uniform_vector(n, 3);
  const float* bias_data = bias ? bv.data() : nullptr;
  return ir::max_relative_error(
      bf16_product(m, n, k, a, b, transposed, bias_data, blocking, threads),
      naive(m, n, k, a, b, transposed, bias_data));
}

// Each test runs on both sets of register tiles: VDPBF16PS ("vdpbf16ps", on CPUs with
// AVX512_BF16) and the bf16 pairs widened to fp32 ("widened", any AVX-512 CPU; chosen here by
// CUVIL_CPU_DISABLE=avx512_bf16).
class Bf16GemmTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (widened()) {
      if (!cpu_has_avx512()) GTEST_SKIP() << "CPU lacks avx512";
    } else if (!cpu_has_avx512_bf16()) {
      GTEST_SKIP() << "CPU lacks avx512_bf16";
    }
    disable("");
  }
  void TearDown() override { unsetenv("CUVIL_CPU_DISABLE"); }
  bool widened() const { return GetParam() == "widened"; }
  // CUVIL_CPU_DISABLE: the parameter's own choice, and `more` (a comma list) beside it.
  void disable(const std::string& more) const {
    std::string list = widened() ? "avx512_bf16" : "";
    if (!more.empty()) list += (list.empty() ? "" : ",") + more;
    setenv("CUVIL_CPU_DISABLE", list.c_str(), 1);
    if (widened()) {
      ASSERT_FALSE(cpu_has_avx512_bf16());
    }
  }
};

INSTANTIATE_TEST_SUITE_P(Tiles, Bf16GemmTest, ::testing::Values("vdpbf16ps", "widened"),
                         [](const auto& info) { return info.param; });

// The stated bound for one bf16 product (8-bit mantissa, fp32 accumulation).
constexpr double kBound = kBf16GemmTolerance;

TEST_P(Bf16GemmTest, OddSizesMatchFp64WithinBound) {
  double worst = 0;
  for (int64_t m : {1, 3, 5, 7, 17, 33}) {
    for (int64_t n : {1, 3, 17, 33, 65}) {
      for (int64_t k : {1, 3, 7, 17, 33, 300}) {
        const double e = bf16_error(m, n, k, true, false);
        worst = std::max(worst, e);
        EXPECT_LE(e, kBound) << m << "x" << n << "x" << k;
      }
    }
  }
  std::printf("bf16 GEMM worst max_relative_error over odd sizes: %.3g\n", worst);
}

// Every row count an edge tile can have (1..MR, beside full tiles), with full and part column
// slivers, an odd number of K pairs (the two-set tiles' tail) and an even one.
TEST_P(Bf16GemmTest, EveryEdgeRowCountMatchesFp64) {
  for (int64_t rows = 1; rows <= kBf16MR; ++rows) {
    for (int64_t n : {int64_t{kBf16NR}, int64_t{2 * kBf16NR + 5}}) {
      for (int64_t k : {9, 16}) {
        EXPECT_LE(bf16_error(kBf16MR + rows, n, k, true, true), kBound)
            << rows << " edge rows, n " << n << ", k " << k;
      }
    }
  }
}

TEST_P(Bf16GemmTest, NotTransposedBAndBias) {
  for (int64_t m : {2, 13, 50}) {
    EXPECT_LE(bf16_error(m, 37, 29, false, true), kBound) << m;
  }
}

TEST_P(Bf16GemmTest, SmallBlocksSplitKAndEdges) {
  Bf16Blocking small;
  small.mc = 12, small.kc = 6, small.nc = 32;
  EXPECT_LE(bf16_error(41, 70, 45, true, true, small), kBound);
  EXPECT_LE(bf16_error(41, 70, 45, true, true, small, 1), kBound);
  // Several K panels of whole AMX steps, and a ragged last one.
  small.kc = 64;
  EXPECT_LE(bf16_error(70, 100, 200, true, true, small), kBound);
}

// A thread's rows that fit one A panel, under several column blocks: A is packed once for the
// whole K and each K panel found again under the next block.
TEST_P(Bf16GemmTest, OneAPanelServesEveryColumnBlock) {
  Bf16Blocking blocking;
  blocking.mc = 48, blocking.kc = 6, blocking.nc = 32;
  for (int threads : {1, 2}) {
    EXPECT_LE(bf16_error(41, 200, 45, true, true, blocking, threads), kBound) << threads;
    EXPECT_LE(bf16_error(13, 97, 64, false, false, blocking, threads), kBound) << threads;
  }
}

// Decode-like products stream the packed slivers, several side by side per thread (the widened
// tiles: 4 / m of them): sliver counts per thread that are and are not multiples of that, the
// partial last sliver inside such a group (n = 229: 8 slivers) or after it, an odd K.
TEST_P(Bf16GemmTest, DecodeRowsStreamPackedWeights) {
  for (int64_t m : {1, 2, 3, 4}) {
    EXPECT_LE(bf16_error(m, 129, 515, true, true), kBound) << m;
    for (int64_t n : {229, 421}) {
      for (int threads : {1, 2}) {
        EXPECT_LE(bf16_error(m, n, 77, true, true, Bf16Blocking{}, threads), kBound)
            << m << " rows, n " << n << ", threads " << threads;
      }
    }
  }
}

// Weights that bf16 holds exactly (multiples of 1/8 below 16) against activations it does not:
// the widened tiles keep A in fp32 (the weights are the only reduced operand), so the product is
// fp32-exact; VDPBF16PS rounds A to bf16 (about 2^-9 relative) on every path, skinny or tiled.
TEST_P(Bf16GemmTest, OnlyVdpbf16psRoundsTheActivations) {
  for (int64_t m : {1, 3, 30}) {
    const int64_t n = 40, k = 65;
    auto a = testing::uniform_vector(m * k, 7);
    std::vector<float> b(static_cast<size_t>(k * n));
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = static_cast<float>(static_cast<int>(i * 37 % 23) - 11) / 8;
    const double e = ir::max_relative_error(bf16_product(m, n, k, a, b, true, nullptr, {}, 2),
                                            naive(m, n, k, a, b, true, nullptr));
    if (widened()) {
      EXPECT_LE(e, 1e-5) << m << " rows";
    } else {
      EXPECT_GT(e, 1e-4) << m << " rows";
    }
  }
}

TEST_P(Bf16GemmTest, LargeKErrorStaysWithinBound) {
  const double e = bf16_error(20, 64, 4096, true, false);
  std::printf("bf16 GEMM max_relative_error at K = 4096: %.3g\n", e);
  EXPECT_LE(e, kBound);
}

// Without AMX tiles the VDPBF16PS register-tile kernel runs every size.
TEST_P(Bf16GemmTest, VectorPathWithoutAmxMatchesBound) {
  disable("amx_bf16");
  EXPECT_FALSE(cpu_has_amx_bf16());
  for (int64_t m : {5, 13, 40}) EXPECT_LE(bf16_error(m, 45, 77, true, true), kBound) << m;
  Bf16Blocking small;
  small.mc = 12, small.kc = 6, small.nc = 32;
  EXPECT_LE(bf16_error(41, 70, 45, true, true, small), kBound);
}

// Each element of C is the same sum whichever thread computes it: every split of C between
// threads (the threading pass's partition) gives the same bits, edges and split K included.
TEST_P(Bf16GemmTest, EveryPartitionGivesTheSameProduct) {
  const int64_t m = 53, n = 97, k = 75;
  const auto a = testing::uniform_vector(m * k, 4);
  const auto b = testing::uniform_vector(k * n, 5);
  Bf16Blocking blocking;
  blocking.mc = 24, blocking.kc = 32, blocking.nc = 64;  // split K, several panels
  auto product = [&](GemmPartition partition) {
    blocking.partition = partition;
    return bf16_product(m, n, k, a, b, true, nullptr, blocking, 4);  // 4: grid cuts 2 x 2
  };
  const ir::Tensor automatic = product(GemmPartition::automatic);
  EXPECT_LE(ir::max_relative_error(automatic, naive(m, n, k, a, b, true, nullptr)), kBound);
  for (GemmPartition p : {GemmPartition::m, GemmPartition::n, GemmPartition::grid}) {
    EXPECT_EQ(product(p).data, automatic.data) << to_string(p);
  }
}

// conv2d.bf16 finishes full register tiles in registers (bias, then the epilogue's lane form)
// and edge tiles after their store. Either way the result has the bits of the convolution
// without the epilogue, finished by Epilogue::apply: for every kind of lane step, for epilogues
// without a lane form, with K in one panel and split in three (finished on the last).
TEST_P(Bf16GemmTest, EpiloguesFinishedInRegistersGiveTheBitsOfApplyAfterwards) {
  disable("amx_bf16");  // the register tiles, not AMX's
  for (const testing::ConvCase& cc : {testing::ConvCase{1, 40, 9, 9, 64, 1, 1, 0, 1, true},
                                      testing::ConvCase{2, 17, 5, 7, 40, 1, 1, 0, 1, false},
                                      testing::ConvCase{1, 7, 9, 9, 33, 3, 1, 1, 1, true}}) {
    for (int64_t kc : {512, 16}) {
      SCOPED_TRACE("c=" + std::to_string(cc.c) + " o=" + std::to_string(cc.o) +
                   " k=" + std::to_string(cc.k) + " kc=" + std::to_string(kc));
      ir::Graph plain = testing::conv_graph(cc, "nhwc", false, false);
      plain.mutable_nodes()[0].attrs.set(attrs::kGemmBf16Kc, kc, "gemm-tiling.bf16_kc");
      testing::expect_fused_epilogues_match_apply(plain, "conv2d.bf16");
    }
  }
}

// conv2d.bf16 reads a convolution's im2col rows from its input as it packs them: whole taps of
// 16 channels, padding, strides, several images in one product, channels that are not a multiple
// of 16 and K panels that start inside a tap (both gathered one element at a time), windows of
// more taps than a row's bit mask holds (9 x 9), and outputs of few pixels (an im2col buffer and
// the streaming path).
TEST_P(Bf16GemmTest, ConvGathersItsIm2colRowsInPlace) {
  disable("amx_bf16");  // AMX tiles take A from an im2col buffer
  for (const testing::ConvCase& cc : {testing::ConvCase{1, 16, 9, 9, 33, 3, 1, 1, 1, true},
                                      testing::ConvCase{2, 32, 7, 8, 40, 3, 2, 1, 1, false},
                                      testing::ConvCase{3, 16, 5, 5, 8, 3, 1, 0, 1, false},
                                      testing::ConvCase{1, 64, 9, 9, 64, 1, 2, 0, 1, true},
                                      testing::ConvCase{1, 17, 11, 9, 20, 5, 3, 2, 1, true},
                                      testing::ConvCase{1, 7, 9, 9, 33, 3, 1, 1, 1, true},
                                      testing::ConvCase{2, 48, 1, 1, 16, 3, 1, 1, 1, true},
                                      testing::ConvCase{1, 16, 12, 11, 8, 9, 1, 4, 1, true}}) {
    for (int64_t kc : {512, 6}) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE("n=" + std::to_string(cc.n) + " c=" + std::to_string(cc.c) +
                     " h=" + std::to_string(cc.h) + " k=" + std::to_string(cc.k) +
                     " stride=" + std::to_string(cc.stride) + " kc=" + std::to_string(kc) +
                     " threads=" + std::to_string(threads));
        ir::Graph g = testing::conv_graph(cc, "nhwc", false, false);
        g.mutable_nodes()[0].attrs.set(attrs::kGemmBf16Kc, kc, "gemm-tiling.bf16_kc");
        EXPECT_LE(testing::prepared_kernel_error(g, "conv2d.bf16", threads), kBound);
      }
    }
  }
}

TEST(Bf16Features, EnvironmentCanDisableBf16) {
  const bool before = cpu_has_avx512_bf16();
  setenv("CUVIL_CPU_DISABLE", "avx512_vnni,avx512_bf16", 1);
  EXPECT_FALSE(cpu_has_avx512_bf16());
  unsetenv("CUVIL_CPU_DISABLE");
  EXPECT_EQ(cpu_has_avx512_bf16(), before);
}

TEST(Bf16Conversion, RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f), 0x3F80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(to_bf16(1.0f + 1.0f / 256), 0x3F80);
  EXPECT_EQ(to_bf16(1.0f + 3.0f / 256), 0x3F82);
  EXPECT_FLOAT_EQ(from_bf16(to_bf16(-2.5f)), -2.5f);
}

}  // namespace
}  // namespace cuvil::runtime::cpu
