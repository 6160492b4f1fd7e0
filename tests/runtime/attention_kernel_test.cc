// The CPU attention kernels (sdpa.auto, sdpa.flash, sdpa.blocked) against the reference
// interpreter at odd sizes, grouped-query, causal and decode shapes, and random tile sizes.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernel_reference_util.h"
#include "passes/ir/graph.h"

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

ir::Graph sdpa_graph(const Case& c, const std::vector<ir::EpilogueStep>& epilogue = {}) {
  ir::Graph g;
  const ir::ValueId q = g.add_input("q", {c.batch, c.hq, c.sq, c.d});
  const ir::ValueId k = g.add_input("k", {c.batch, c.hkv, c.skv, c.d});
  const ir::ValueId v = g.add_input("v", {c.batch, c.hkv, c.skv, c.d});
  ir::Attrs attrs{{"causal", int64_t{c.causal ? 1 : 0}}};
  const ir::ValueId out = g.add_node(ir::OpKind::sdpa, {q, k, v}, attrs, "sdpa");
  // Epilogue operands follow the op's own inputs.
  for (const ir::EpilogueStep& e : epilogue) {
    if (e.input >= 0) {
      const ir::ValueId r = g.add_input("r", {c.batch, c.hq, c.sq, c.d});
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

}  // namespace
}  // namespace cuvil::runtime
