// The CPU attention kernels (sdpa.auto, sdpa.flash, sdpa.blocked, and sdpa.flash_bf16 where the
// CPU has AVX512_BF16) against the reference interpreter at odd sizes, grouped-query, causal and
// decode shapes, and random tile sizes.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernel_reference_util.h"
#include "passes/ir/graph.h"
#include "runtime/cpu/quantize.h"

namespace cuvil::runtime {
namespace {

using ir::Shape;

struct Case {
  int64_t batch, hq, hkv, sq, skv, d;
  bool causal;
};

std::string describe(const Case& c) {
  std::string s;  // built by append: GCC 12 warns falsely on "literal" + std::string
  for (int64_t v : {c.batch, c.hq, c.hkv, c.sq, c.skv, c.d})
    s.append(std::to_string(v)).append(" ");
  return s.append(c.causal ? "causal" : "full");
}

// V's head dim is Q's and K's unless dv is given.
ir::Graph sdpa_graph(const Case& c, const std::vector<ir::EpilogueStep>& epilogue = {},
                     int64_t dv = 0) {
  ir::Graph g;
  const ir::ValueId q = g.add_input("q", {c.batch, c.hq, c.sq, c.d});
  const ir::ValueId k = g.add_input("k", {c.batch, c.hkv, c.skv, c.d});
  const ir::ValueId v = g.add_input("v", {c.batch, c.hkv, c.skv, dv > 0 ? dv : c.d});
  ir::Attrs attrs{{"causal", int64_t{c.causal ? 1 : 0}}};
  const ir::ValueId out = g.add_node(ir::OpKind::sdpa, {q, k, v}, attrs, "sdpa");
  // Epilogue operands follow the op's own inputs.
  for (const ir::EpilogueStep& e : epilogue) {
    if (e.input >= 0) {
      const ir::ValueId r = g.add_input("r", {c.batch, c.hq, c.sq, dv > 0 ? dv : c.d});
      g.mutable_nodes().back().inputs.push_back(r);
    }
  }
  g.mutable_nodes().back().epilogue = epilogue;
  g.mark_output(out);
  return g;
}

using testing::kernel_error;

const char* const kKernels[] = {"sdpa.auto", "sdpa.flash", "sdpa.blocked"};

std::vector<Case> odd_cases() {
  std::vector<Case> cases;
  for (int64_t s : {1, 3, 7, 17, 65, 129}) {
    for (int64_t d : {8, 64, 128}) {
      cases.push_back({1, 2, 2, s, s, d, false});
      cases.push_back({1, 6, 2, s, s, d, true});
    }
  }
  return cases;
}

TEST(AttentionKernels, OddSizesMatchReference) {
  for (const Case& c : odd_cases()) {
    for (const char* kernel : kKernels) {
      EXPECT_LT(kernel_error(sdpa_graph(c), kernel, 2), 1e-4) << kernel << " " << describe(c);
    }
  }
}

TEST(AttentionKernels, CrossAttentionDifferentLengths) {
  for (int64_t sq : {1, 7, 65}) {
    for (int64_t skv : {3, 17, 77, 129}) {
      const Case c{2, 3, 3, sq, skv, 64, false};
      for (const char* kernel : kKernels) {
        EXPECT_LT(kernel_error(sdpa_graph(c), kernel, 2), 1e-4) << kernel << " " << describe(c);
      }
    }
  }
}

TEST(AttentionKernels, CausalQueriesAlignToTheEnd) {
  for (int64_t sq : {1, 3, 17}) {
    for (int64_t skv : {17, 65, 129}) {
      const Case c{1, 6, 2, sq, skv, 64, true};
      for (const char* kernel : kKernels) {
        EXPECT_LT(kernel_error(sdpa_graph(c), kernel, 2), 1e-4) << kernel << " " << describe(c);
      }
    }
  }
}

TEST(AttentionKernels, LlamaGroupedQueryPrefillAndDecode) {
  const Case prefill{1, 32, 8, 33, 33, 128, true};
  const Case decode{1, 32, 8, 1, 129, 128, true};
  for (const Case& c : {prefill, decode}) {
    for (const char* kernel : kKernels) {
      EXPECT_LT(kernel_error(sdpa_graph(c), kernel, 2), 1e-4) << kernel << " " << describe(c);
    }
  }
}

TEST(AttentionKernels, FlashAtRandomTileSizes) {
  std::mt19937 rng(3);
  // Log-uniform over the attention-tiling pass's ranges.
  auto draw = [&rng](double lo, double hi) {
    std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
    return static_cast<int64_t>(std::exp(u(rng)));
  };
  const Case cases[] = {{1, 6, 2, 129, 129, 64, true},
                        {1, 6, 2, 65, 129, 8, false},
                        {2, 4, 1, 17, 65, 128, true},
                        {1, 2, 2, 129, 77, 64, false}};
  for (int trial = 0; trial < 6; ++trial) {
    const ir::Attrs tiles{{"attention.block_q", draw(16, 256)},
                          {"attention.block_kv", draw(32, 1024)}};
    for (const Case& c : cases) {
      EXPECT_LT(kernel_error(sdpa_graph(c), "sdpa.flash", 2, tiles), 1e-4)
          << describe(c) << " block_q " << tiles.get_int("attention.block_q", 0) << " block_kv "
          << tiles.get_int("attention.block_kv", 0);
    }
  }
}

TEST(AttentionKernels, TinyTilesStillCoverEveryKey) {
  const ir::Attrs tiles{{"attention.block_q", int64_t{1}}, {"attention.block_kv", int64_t{1}}};
  const Case c{1, 4, 2, 17, 65, 8, true};
  EXPECT_LT(kernel_error(sdpa_graph(c), "sdpa.flash", 1, tiles), 1e-4);
}

TEST(AttentionKernels, SingleThreadMatchesReference) {
  const Case c{1, 6, 2, 65, 65, 64, true};
  for (const char* kernel : kKernels) {
    EXPECT_LT(kernel_error(sdpa_graph(c), kernel, 1), 1e-4) << kernel;
  }
}

TEST(AttentionKernels, EpilogueAppliedToEachOutputRow) {
  const Case c{1, 6, 2, 17, 33, 64, true};
  const std::vector<ir::EpilogueStep> epi = {{ir::OpKind::add, 3}, {ir::OpKind::gelu, -1}};
  for (const char* kernel : kKernels) {
    EXPECT_LT(kernel_error(sdpa_graph(c, epi), kernel, 2), 1e-4) << kernel;
  }
}

TEST(AttentionKernels, ExplicitScaleIsHonoured) {
  ir::Graph g = sdpa_graph({1, 2, 2, 17, 17, 64, false});
  g.mutable_nodes().back().attrs.set("scale", 0.5);
  for (const char* kernel : kKernels) EXPECT_LT(kernel_error(g, kernel, 2), 1e-4) << kernel;
}

// sdpa.flash_bf16: Q, K, V and P rounded to bf16 (8 mantissa bits), fp32 softmax and sums. Two
// chained bf16 products, each held to kBf16GemmTolerance (2e-2) alone; measured worst case over
// these cases 3.0e-2 (the output, an average of V, is small beside each term).
constexpr double kBf16AttentionTolerance = 2 * cpu::kBf16GemmTolerance;

class FlashBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::cpu_has_avx512_bf16()) GTEST_SKIP() << "CPU lacks avx512_bf16";
  }
};

TEST_F(FlashBf16, OddSizesAndHeadDimsMatchReference) {
  std::vector<Case> cases = odd_cases();
  // Odd head dims: the last pair of Q and K is half zero.
  for (int64_t d : {1, 7, 17}) {
    cases.push_back({1, 2, 2, 33, 33, d, false});
    cases.push_back({1, 6, 2, 17, 17, d, true});
  }
  for (const Case& c : cases) {
    EXPECT_LT(kernel_error(sdpa_graph(c), "sdpa.flash_bf16", 2), kBf16AttentionTolerance)
        << describe(c);
  }
}

TEST_F(FlashBf16, CrossAttentionOddKeyCountsAndValueWidths) {
  // Odd key counts end on half a pair of keys; value widths off the 16-lane vectors.
  for (int64_t skv : {1, 3, 17, 77, 129}) {
    for (int64_t dv : {1, 17, 64, 80}) {
      const Case c{2, 3, 3, 7, skv, 64, false};
      EXPECT_LT(kernel_error(sdpa_graph(c, {}, dv), "sdpa.flash_bf16", 2), kBf16AttentionTolerance)
          << describe(c) << " dv " << dv;
    }
  }
}

TEST_F(FlashBf16, CausalGroupedQueryAtRandomTileSizes) {
  std::mt19937 rng(11);
  auto draw = [&rng](double lo, double hi) {
    std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
    return static_cast<int64_t>(std::exp(u(rng)));
  };
  const Case cases[] = {{1, 32, 8, 33, 33, 128, true},
                        {1, 6, 2, 129, 129, 64, true},
                        {2, 4, 1, 17, 65, 128, true},
                        {1, 2, 2, 129, 77, 64, false}};
  for (int trial = 0; trial < 4; ++trial) {
    const ir::Attrs tiles{{"attention.block_q", draw(1, 256)},
                          {"attention.block_kv", draw(1, 1024)}};
    for (const Case& c : cases) {
      for (int threads : {1, 2}) {
        EXPECT_LT(kernel_error(sdpa_graph(c), "sdpa.flash_bf16", threads, tiles),
                  kBf16AttentionTolerance)
            << describe(c) << " threads " << threads << " block_q "
            << tiles.get_int("attention.block_q", 0) << " block_kv "
            << tiles.get_int("attention.block_kv", 0);
      }
    }
  }
}

TEST_F(FlashBf16, EpilogueAndScaleAreHonoured) {
  const Case c{1, 6, 2, 17, 33, 64, true};
  const std::vector<ir::EpilogueStep> epi = {{ir::OpKind::add, 3}, {ir::OpKind::gelu, -1}};
  EXPECT_LT(kernel_error(sdpa_graph(c, epi), "sdpa.flash_bf16", 2), kBf16AttentionTolerance);
  ir::Graph g = sdpa_graph({1, 2, 2, 17, 17, 64, false});
  g.mutable_nodes().back().attrs.set("scale", 0.5);
  EXPECT_LT(kernel_error(g, "sdpa.flash_bf16", 2), kBf16AttentionTolerance);
}

// The products really run in bf16: inputs exact in fp32 but not in bf16 give an error at bf16's
// scale, which the fp32 flash kernel does not have.
TEST_F(FlashBf16, RoundsItsOperandsToBf16) {
  const Case c{1, 2, 2, 33, 33, 64, false};
  const double bf16 = kernel_error(sdpa_graph(c), "sdpa.flash_bf16", 2);
  const double fp32 = kernel_error(sdpa_graph(c), "sdpa.flash", 2);
  EXPECT_GT(bf16, 1e-4);
  EXPECT_LT(fp32, 1e-5);
}

}  // namespace
}  // namespace cuvil::runtime
