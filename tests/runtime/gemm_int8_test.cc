#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "passes/ir/tensor.h"
#include "runtime/cpu/gemm_int8.h"
#include "runtime/thread_pool.h"
#include "tests/runtime/conv_kernel_support.h"
#include "tests/runtime/conv_test_graphs.h"
#include "tests/runtime/random_data.h"

namespace cuvil::runtime::cpu {
namespace {

// C = A W^T (+ bias) in fp64, W stored [n, k].
ir::Tensor naive(int64_t m, int64_t n, int64_t k, const std::vector<float>& a,
                 const std::vector<float>& w, const float* bias) {
  ir::Tensor out({m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int64_t p = 0; p < k; ++p) acc += static_cast<double>(a[i * k + p]) * w[j * k + p];
      out.data[static_cast<size_t>(i * n + j)] = static_cast<float>(acc);
    }
  }
  return out;
}

// Runs the whole int8 path (dynamic activation quantisation, per-channel weights) on a, w.
ir::Tensor int8_product(int64_t m, int64_t n, int64_t k, const std::vector<float>& a,
                        const std::vector<float>& w, const float* bias, int threads = 2,
                        ActivationQuant* used = nullptr,
                        GemmPartition partition = GemmPartition::automatic, int64_t mc = 0) {
  ThreadPool pool(threads);
  const auto packed = quantize_pack_int8(w.data(), n, k, k);
  std::vector<uint8_t> aq(static_cast<size_t>(u8_buffer_bytes(m * k)));
  Int8Gemm g;
  g.m = m;
  g.aq = choose_activation_quant(a.data(), m * k, pool);
  if (used) *used = g.aq;
  quantize_u8(a.data(), m * k, g.aq, aq.data(), pool);
  g.a = aq.data(), g.lda = k;
  g.b = packed.get();
  ir::Tensor c({m, n});
  g.c = c.data.data(), g.ldc = n;
  g.bias = bias;
  g.partition = partition;
  if (mc > 0) g.mc = mc;
  gemm_int8(g, pool);
  return c;
}

double int8_error(int64_t m, int64_t n, int64_t k, float lo, float hi, bool bias) {
  const auto a = testing::uniform_vector(m * k, 11, lo, hi);
  const auto w = testing::uniform_vector(n * k, 12, -1.0f, 1.0f);
  const auto bv = testing::uniform_vector(n, 13, -1.0f, 1.0f);
  const float* b = bias ? bv.data() : nullptr;
  return ir::max_relative_error(int8_product(m, n, k, a, w, b), naive(m, n, k, a, w, b));
}

class Int8GemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_has_avx512_vnni()) GTEST_SKIP() << "CPU lacks avx512_vnni";
  }
};

TEST_F(Int8GemmTest, OddSizesSignedActivationsWithinBound) {
  double worst = 0;
  for (int64_t m : {1, 3, 5, 7, 17, 33}) {
    for (int64_t n : {1, 3, 17, 33, 65}) {
      for (int64_t k : {1, 3, 7, 17, 33, 300}) {
        // A lone output has no RMS to be measured against: one short dot product that cancels
        // has an unbounded relative error, so it is checked by single_output_error below.
        if (m * n == 1) continue;
        const double e = int8_error(m, n, k, -1.0f, 1.0f, false);
        worst = std::max(worst, e);
        EXPECT_LE(e, kInt8GemmTolerance) << m << "x" << n << "x" << k;
      }
    }
  }
  std::printf("int8 GEMM worst max_relative_error over odd sizes: %.3g\n", worst);
}

// A single dot product: its error is bounded relative to sum_k |a_k w_k| (no cancellation).
TEST_F(Int8GemmTest, SingleOutputErrorBoundedByMagnitudes) {
  for (int64_t k : {1, 3, 7, 300}) {
    const auto a = testing::uniform_vector(k, 31, -1.0f, 1.0f);
    const auto w = testing::uniform_vector(k, 32, -1.0f, 1.0f);
    const ir::Tensor c = int8_product(1, 1, k, a, w, nullptr);
    double exact = 0, magnitude = 0;
    for (int64_t p = 0; p < k; ++p) {
      exact += static_cast<double>(a[static_cast<size_t>(p)]) * w[static_cast<size_t>(p)];
      magnitude +=
          std::abs(static_cast<double>(a[static_cast<size_t>(p)]) * w[static_cast<size_t>(p)]);
    }
    EXPECT_LE(std::abs(c.data[0] - exact), kInt8GemmTolerance * magnitude) << k;
  }
}

TEST_F(Int8GemmTest, NonNegativeActivationsUseZeroPointZero) {
  ThreadPool pool(1);
  const auto a = testing::uniform_vector(100, 5, 0.0f, 3.0f);
  const ActivationQuant q = choose_activation_quant(a.data(), 100, pool);
  EXPECT_EQ(q.zero_point, 0);
  for (int64_t m : {2, 19})
    EXPECT_LE(int8_error(m, 45, 77, 0.0f, 3.0f, true), kInt8GemmTolerance) << m;
}

TEST_F(Int8GemmTest, NegativeActivationsUseZeroPoint128) {
  ThreadPool pool(1);
  const auto a = testing::uniform_vector(100, 5, -3.0f, -0.5f);
  const ActivationQuant q = choose_activation_quant(a.data(), 100, pool);
  EXPECT_EQ(q.zero_point, 128);
  for (int64_t m : {1, 4, 19})
    EXPECT_LE(int8_error(m, 45, 77, -3.0f, -0.5f, true), kInt8GemmTolerance) << m;
}

// Integer data with max |a| = max |w| = 127 quantises exactly (scales 1, zero point 128), so
// the only way to be off is a wrong u8 x s8 compensation: the result must be exact.
TEST_F(Int8GemmTest, CompensationIsExactForIntegerData) {
  for (int64_t m : {1, 3, 13, 40}) {
    const int64_t n = 35, k = 71;
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> dist(-127, 127);
    std::vector<float> a(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k));
    for (float& x : a) x = static_cast<float>(dist(rng));
    for (float& x : w) x = static_cast<float>(dist(rng));
    a[0] = -127.0f;  // max |a| = 127 and a negative value present
    for (int64_t j = 0; j < n; ++j) w[static_cast<size_t>(j * k)] = (j % 2) ? 127.0f : -127.0f;
    ActivationQuant used;
    const ir::Tensor c = int8_product(m, n, k, a, w, nullptr, 2, &used);
    ASSERT_EQ(used.zero_point, 128);
    ASSERT_FLOAT_EQ(used.scale, 1.0f);
    const ir::Tensor ref = naive(m, n, k, a, w, nullptr);
    for (size_t i = 0; i < c.data.size(); ++i) ASSERT_EQ(c.data[i], ref.data[i]) << m << " " << i;
  }
}

// AMX tiles and VPDPBUSD both sum in exact int32 and dequantise the same way: the two paths give
// the same bits, at odd sizes, K tails inside a tile step, edge rows and columns, with a bias.
TEST_F(Int8GemmTest, AmxAndVnniPathsGiveTheSameProduct) {
  if (!cpu_has_amx_int8()) GTEST_SKIP() << "CPU lacks AMX-INT8 (or Linux did not grant it)";
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{5, 33, 7},
                                {33, 45, 65},
                                {70, 65, 300},
                                {97, 129, 1000}}) {
    const auto a = testing::uniform_vector(m * k, 21, -1.0f, 1.0f);
    const auto w = testing::uniform_vector(n * k, 22, -1.0f, 1.0f);
    const auto b = testing::uniform_vector(n, 23, -1.0f, 1.0f);
    const ir::Tensor amx = int8_product(m, n, k, a, w, b.data());
    setenv("CUVIL_CPU_DISABLE", "amx_int8", 1);
    EXPECT_FALSE(cpu_has_amx_int8());
    const ir::Tensor vnni = int8_product(m, n, k, a, w, b.data());
    unsetenv("CUVIL_CPU_DISABLE");
    EXPECT_EQ(amx.data, vnni.data) << m << "x" << n << "x" << k;
    EXPECT_LE(ir::max_relative_error(amx, naive(m, n, k, a, w, b.data())), kInt8GemmTolerance);
  }
}

// Each element of C is the same exact int32 sum whichever thread computes it: every split of C
// between threads (the threading pass's partition) gives the same bits.
TEST_F(Int8GemmTest, EveryPartitionGivesTheSameProduct) {
  const int64_t m = 53, n = 97, k = 75;
  const auto a = testing::uniform_vector(m * k, 24, -1.0f, 1.0f);
  const auto w = testing::uniform_vector(n * k, 25, -1.0f, 1.0f);
  const auto b = testing::uniform_vector(n, 26, -1.0f, 1.0f);
  const ir::Tensor automatic =
      int8_product(m, n, k, a, w, b.data(), 4, nullptr, GemmPartition::automatic, 24);
  EXPECT_LE(ir::max_relative_error(automatic, naive(m, n, k, a, w, b.data())), kInt8GemmTolerance);
  for (GemmPartition p : {GemmPartition::m, GemmPartition::n, GemmPartition::grid}) {
    EXPECT_EQ(int8_product(m, n, k, a, w, b.data(), 4, nullptr, p, 24).data, automatic.data)
        << to_string(p);
  }
}

TEST_F(Int8GemmTest, SingleThreadMatchesBound) {
  const auto a = testing::uniform_vector(50 * 260, 21, -2.0f, 2.0f);
  const auto w = testing::uniform_vector(70 * 260, 22, -1.0f, 1.0f);
  EXPECT_LE(ir::max_relative_error(int8_product(50, 70, 260, a, w, nullptr, 1),
                                   naive(50, 70, 260, a, w, nullptr)),
            kInt8GemmTolerance);
}

TEST(Int8Quantize, PerRowSymmetricScales) {
  const std::vector<float> w = {0.5f, -1.0f, 0.25f, 0.0f, 0.0f, 0.0f};
  std::vector<int8_t> q(6);
  std::vector<float> scale(2);
  quantize_rows_s8(w.data(), 2, 3, 3, q.data(), scale.data());
  EXPECT_FLOAT_EQ(scale[0], 1.0f / 127);
  EXPECT_EQ(q[1], -127);
  EXPECT_EQ(q[0], 64);              // 63.5 rounds to even
  EXPECT_FLOAT_EQ(scale[1], 1.0f);  // an all-zero row keeps a usable scale
  EXPECT_EQ(q[4], 0);
}

TEST(Int8Features, EnvironmentCanDisableVnni) {
  const bool before = cpu_has_avx512_vnni();
  setenv("CUVIL_CPU_DISABLE", "avx512_vnni", 1);
  EXPECT_FALSE(cpu_has_avx512_vnni());
  unsetenv("CUVIL_CPU_DISABLE");
  EXPECT_EQ(cpu_has_avx512_vnni(), before);
}

// conv2d.int8 finishes full register tiles in registers (bias, then the epilogue's lane form)
// and edge tiles after their store. Either way the result has the bits of the convolution
// without the epilogue, finished by Epilogue::apply: for every kind of lane step, and for
// epilogues without a lane form; 1x1 products with edge rows and columns, and a 3x3 on its
// column buffer.
TEST_F(Int8GemmTest, EpiloguesFinishedInRegistersGiveTheBitsOfApplyAfterwards) {
  setenv("CUVIL_CPU_DISABLE", "amx_int8", 1);  // the register tiles, not AMX's
  for (const testing::ConvCase& cc : {testing::ConvCase{1, 40, 9, 9, 64, 1, 1, 0, 1, true},
                                      testing::ConvCase{2, 17, 5, 7, 40, 1, 1, 0, 1, false},
                                      testing::ConvCase{1, 7, 9, 9, 33, 3, 1, 1, 1, true}}) {
    SCOPED_TRACE("c=" + std::to_string(cc.c) + " o=" + std::to_string(cc.o) +
                 " k=" + std::to_string(cc.k));
    testing::expect_fused_epilogues_match_apply(testing::conv_graph(cc, "nhwc", false, false),
                                                "conv2d.int8");
  }
  unsetenv("CUVIL_CPU_DISABLE");
}

}  // namespace
}  // namespace cuvil::runtime::cpu
