#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/ir/graph.h"
#include "passes/lower.h"
#include "tests/passes/lower_support.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using testing::compiled_error;
using testing::run_pass;
using testing::tiny_decoder;
using testing::tiny_unet_block;

const ir::Node& first_sdpa(const Graph& g) {
  for (const ir::Node& n : g.nodes()) {
    if (n.op == OpKind::sdpa) return n;
  }
  ADD_FAILURE() << "no sdpa node";
  return g.nodes().front();
}

TEST(AttentionTiling, SetsKernelAndTileAttributes) {
  Graph g = tiny_decoder(1, 9, 32);
  run_pass(g, "attention-tiling",
           {{"impl", std::string("flash")}, {"block_q", int64_t{32}}, {"block_kv", int64_t{64}}});
  const ir::Node& n = first_sdpa(g);
  EXPECT_EQ(n.attrs.get_string("impl", ""), "sdpa.flash");
  EXPECT_EQ(n.attrs.get_int("attention.block_q", 0), 32);
  EXPECT_EQ(n.attrs.get_int("attention.block_kv", 0), 64);
}

TEST(AttentionTiling, KeepsAnExplicitKernelChoice) {
  Graph g = tiny_decoder(1, 9, 32);
  for (ir::Node& n : g.mutable_nodes()) {
    if (n.op == OpKind::sdpa) n.attrs.set("impl", std::string("sdpa.blocked"));
  }
  run_pass(g, "attention-tiling", {{"impl", std::string("flash")}});
  EXPECT_EQ(first_sdpa(g).attrs.get_string("impl", ""), "sdpa.blocked");
}

TEST(AttentionTiling, LeavesOtherNodesAlone) {
  Graph g = tiny_decoder(1, 9, 32);
  const Graph before = g;
  run_pass(g, "attention-tiling");
  ASSERT_EQ(g.nodes().size(), before.nodes().size());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (g.nodes()[i].op != OpKind::sdpa) {
      EXPECT_EQ(g.nodes()[i].attrs, before.nodes()[i].attrs);
    }
  }
}

TEST(AttentionTiling, EveryKernelMatchesReferenceInALlamaLayer) {
  for (const char* impl : {"auto", "flash", "blocked"}) {
    Graph g = tiny_decoder(2, 19, 64);
    run_pass(g, "attention-tiling",
             {{"impl", std::string(impl)}, {"block_q", int64_t{16}}, {"block_kv", int64_t{32}}});
    EXPECT_LT(compiled_error(g, 2), 1e-4) << impl;
  }
}

TEST(AttentionTiling, EveryKernelMatchesReferenceInAUnetBlock) {
  for (const char* impl : {"auto", "flash", "blocked"}) {
    Graph g = tiny_unet_block(1, 32, 9);
    run_pass(g, "attention-tiling", {{"impl", std::string(impl)}, {"block_q", int64_t{17}}});
    EXPECT_LT(compiled_error(g, 2), 1e-4) << impl;
  }
}

TEST(AttentionTiling, UnknownKernelOnTheNodeIsAUserError) {
  Graph g = tiny_decoder(1, 9, 32);
  for (ir::Node& n : g.mutable_nodes()) {
    if (n.op == OpKind::sdpa) n.attrs.set("impl", std::string("sdpa.nope"));
  }
  run_pass(g, "attention-tiling");
  EXPECT_THROW(lower(g, {1}), UserError);
}

}  // namespace
}  // namespace cuvil::passes
