#include <gtest/gtest.h>

#include "passes/ir/graph.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using testing::count_ops;
using testing::max_error_after;
using testing::random_constant;
using testing::run_pass;

void fuse(Graph& g, int64_t depth, bool binary = true) {
  run_pass(g, "fuse-elementwise", {{"max_fusion_depth", depth}, {"fuse_binary", binary}});
}

size_t longest_epilogue(const Graph& g) {
  size_t n = 0;
  for (const ir::Node& node : g.nodes()) n = std::max(n, node.epilogue.size());
  return n;
}

// linear -> + bias row -> gelu -> * scale column -> - other -> relu -> sigmoid: six elementwise
// ops that can all fold into the linear.
Graph linear_chain(int64_t rows, int64_t features) {
  Graph g;
  const ValueId x = g.add_input("x", {rows, 5});
  const ValueId other = g.add_input("other", {rows, features});
  ValueId y = g.add_node(OpKind::linear, {x, random_constant(g, "w", {features, 5}, 1)});
  y = g.add_node(OpKind::add, {y, random_constant(g, "row", {features}, 2)});
  y = g.add_node(OpKind::gelu, {y});
  y = g.add_node(OpKind::mul, {random_constant(g, "col", {rows, 1}, 3), y});  // running on right
  y = g.add_node(OpKind::sub, {y, other});
  y = g.add_node(OpKind::relu, {y});
  g.mark_output(g.add_node(OpKind::sigmoid, {y}));
  return g;
}

TEST(FuseElementwise, ChainMatchesReferenceAtEveryDepth) {
  for (int64_t depth : {0, 1, 2, 3, 5, 8}) {
    for (int64_t features : {1, 7, 17}) {
      SCOPED_TRACE("depth=" + std::to_string(depth) + " features=" + std::to_string(features));
      const Graph before = linear_chain(3, features);
      Graph after = before;
      fuse(after, depth);
      EXPECT_LE(longest_epilogue(after), static_cast<size_t>(depth));
      EXPECT_LT(max_error_after(before, after), 1e-4);
    }
  }
}

TEST(FuseElementwise, WholeChainFoldsIntoProducer) {
  Graph g = linear_chain(3, 7);
  fuse(g, 8);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].epilogue.size(), 6u);
  EXPECT_EQ(g.annotations.at("fuse-elementwise.fused"), 6);
}

TEST(FuseElementwise, DepthZeroChangesNothing) {
  Graph g = linear_chain(3, 7);
  const size_t nodes = g.nodes().size();
  fuse(g, 0);
  EXPECT_EQ(g.nodes().size(), nodes);
  EXPECT_EQ(longest_epilogue(g), 0u);
}

TEST(FuseElementwise, DepthLimitStartsANewProducer) {
  Graph g = linear_chain(3, 7);
  fuse(g, 2);
  // linear[add, gelu] -> mul[sub, relu] -> sigmoid is left for an elementwise producer too.
  EXPECT_EQ(longest_epilogue(g), 2u);
  EXPECT_LT(g.nodes().size(), 7u);
}

TEST(FuseElementwise, EpilogueOperandsFollowTheOpInputs) {
  Graph g = linear_chain(3, 7);
  fuse(g, 8);
  for (const ir::Node& n : g.nodes()) {
    size_t next = n.op_input_count();
    for (const ir::EpilogueStep& step : n.epilogue) {
      if (ir::is_binary_elementwise(step.op)) {
        EXPECT_EQ(step.input, static_cast<int>(next++));
      }
    }
    EXPECT_EQ(next, n.inputs.size());
  }
}

TEST(FuseElementwise, UnaryOnlyWhenBinaryDisabled) {
  const Graph before = linear_chain(3, 7);
  Graph g = before;
  fuse(g, 8, false);
  for (const ir::Node& n : g.nodes()) {
    for (const ir::EpilogueStep& step : n.epilogue) EXPECT_TRUE(ir::is_unary_elementwise(step.op));
  }
  EXPECT_EQ(count_ops(g, OpKind::gelu), 0);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(FuseElementwise, ResultWithTwoUsersIsNotFused) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 5});
  const ValueId y = g.add_node(OpKind::linear, {x, random_constant(g, "w", {7, 5}, 1)});
  g.mark_output(g.add_node(OpKind::add, {g.add_node(OpKind::relu, {y}), y}));
  fuse(g, 4);
  EXPECT_EQ(count_ops(g, OpKind::relu), 1);
}

TEST(FuseElementwise, GraphOutputIsNotFusedAway) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 5});
  const ValueId y = g.add_node(OpKind::linear, {x, random_constant(g, "w", {7, 5}, 1)});
  g.mark_output(y);
  g.mark_output(g.add_node(OpKind::relu, {y}));
  fuse(g, 4);
  EXPECT_EQ(count_ops(g, OpKind::relu), 1);
}

TEST(FuseElementwise, RunningValueOnRightOfSubIsNotFused) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 5});
  const ValueId other = g.add_input("o", {3, 7});
  const ValueId y = g.add_node(OpKind::linear, {x, random_constant(g, "w", {7, 5}, 1)});
  g.mark_output(g.add_node(OpKind::sub, {other, y}));
  const Graph before = g;
  fuse(g, 4);
  EXPECT_EQ(count_ops(g, OpKind::sub), 1);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(FuseElementwise, RunningValueOnRightOfDivIsNotFused) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 5});
  const ValueId y = g.add_node(OpKind::linear, {x, random_constant(g, "w", {7, 5}, 1)});
  g.mark_output(g.add_node(OpKind::div, {random_constant(g, "n", {7}, 2), y}));
  fuse(g, 4);
  EXPECT_EQ(count_ops(g, OpKind::div), 1);
}

TEST(FuseElementwise, RunningValueOnRightOfAddIsFused) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 5});
  const ValueId other = g.add_input("o", {3, 7});
  const ValueId y = g.add_node(OpKind::linear, {x, random_constant(g, "w", {7, 5}, 1)});
  g.mark_output(g.add_node(OpKind::add, {other, y}));
  const Graph before = g;
  fuse(g, 4);
  EXPECT_EQ(count_ops(g, OpKind::add), 0);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(FuseElementwise, OperandThatWouldGrowTheResultIsNotFused) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 5});
  const ValueId y = g.add_node(OpKind::linear, {x, random_constant(g, "w", {1, 5}, 1)});  // [3,1]
  g.mark_output(g.add_node(OpKind::mul, {y, g.add_input("row", {1, 7})}));                // [3,7]
  const Graph before = g;
  fuse(g, 4);
  EXPECT_EQ(count_ops(g, OpKind::mul), 1);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(FuseElementwise, DataMovementOpsAreNotProducers) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 7});
  const ValueId r = g.add_node(OpKind::reshape, {x}, {{"shape", std::vector<int64_t>{7, 3}}});
  g.mark_output(g.add_node(OpKind::relu, {r}));
  fuse(g, 4);
  EXPECT_EQ(count_ops(g, OpKind::relu), 1);
}

// A cast's result has its own dtype: what follows it (Mod's a - b * trunc(a / b)) stays apart.
TEST(FuseElementwise, CastIsNotAProducer) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 7});
  const ValueId q = g.add_node(OpKind::cast, {x}, {{"dtype", std::string("i32")}});
  g.mark_output(g.add_node(OpKind::mul, {q, g.add_input("b", {3, 7}, ir::DType::i32)}));
  Graph before = g;
  fuse(g, 4);
  EXPECT_EQ(count_ops(g, OpKind::mul), 1);
  EXPECT_LT(max_error_after(before, g), 1e-6);
}

TEST(FuseElementwise, ConvResidualInBothLayouts) {
  for (const char* layout : {"nchw", "nhwc"}) {
    for (int64_t depth : {1, 2, 4}) {
      SCOPED_TRACE(std::string(layout) + " depth " + std::to_string(depth));
      const Graph before = testing::tiny_resnet(2, 7, 5);
      Graph after = before;
      run_pass(after, "fold-batchnorm");
      run_pass(after, "layout", {{"memory_layout", std::string(layout)}});
      fuse(after, depth);
      EXPECT_LE(longest_epilogue(after), static_cast<size_t>(depth));
      // With room for two steps both relus fold (conv[relu], conv[add, relu]).
      if (depth >= 2) {
        EXPECT_EQ(count_ops(after, OpKind::relu), 0);
      }
      EXPECT_LT(max_error_after(before, after), 1e-4);
    }
  }
}

TEST(FuseElementwise, DecoderMatchesReference) {
  for (int64_t depth : {1, 3, 8}) {
    const Graph before = testing::tiny_decoder(1, 5, 24);
    Graph after = before;
    fuse(after, depth);
    EXPECT_GT(after.annotations.at("fuse-elementwise.fused"), 0);
    EXPECT_LT(max_error_after(before, after), 1e-4);
  }
}

TEST(FuseElementwise, UnetBlockMatchesReference) {
  for (int64_t depth : {1, 2, 4}) {
    const Graph before = testing::tiny_unet_block(2, 3, 5);
    Graph after = before;
    fuse(after, depth);
    EXPECT_LE(longest_epilogue(after), static_cast<size_t>(depth));
    EXPECT_LT(max_error_after(before, after), 1e-4);
  }
}

}  // namespace
}  // namespace cuvil::passes
