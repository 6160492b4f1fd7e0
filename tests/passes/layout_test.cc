#include <gtest/gtest.h>

#include "passes/ir/graph.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;
using testing::add_conv;
using testing::count_ops;
using testing::max_error_after;
using testing::run_pass;
using Ints = std::vector<int64_t>;

void run_layout(Graph& g, const std::string& layout) {
  run_pass(g, "layout", {{"memory_layout", layout}});
}

// No transpose reads another transpose's result.
bool has_transpose_pair(const Graph& g) {
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::transpose) continue;
    const ir::NodeId p = g.value(n.inputs[0]).producer;
    if (p >= 0 && g.node(p).op == OpKind::transpose) return true;
  }
  return false;
}

void expect_all_layout_aware_in(const Graph& g, const std::string& layout) {
  for (const ir::Node& n : g.nodes()) {
    if (ir::is_layout_aware(n.op)) {
      EXPECT_EQ(n.attrs.get_string("layout", "nchw"), layout) << n.name;
    }
  }
}

std::vector<Shape> output_shapes(const Graph& g) {
  std::vector<Shape> shapes;
  for (ValueId v : g.outputs()) shapes.push_back(g.value(v).shape);
  return shapes;
}

class LayoutBothWays : public ::testing::TestWithParam<std::string> {};

TEST_P(LayoutBothWays, ResnetMatchesReference) {
  for (int64_t channels : {3, 7, 17}) {
    for (int64_t spatial : {1, 5, 9}) {
      SCOPED_TRACE("C=" + std::to_string(channels) + " S=" + std::to_string(spatial));
      const Graph before = testing::tiny_resnet(2, channels, spatial);
      Graph after = before;
      run_layout(after, GetParam());
      expect_all_layout_aware_in(after, GetParam());
      EXPECT_FALSE(has_transpose_pair(after));
      EXPECT_EQ(output_shapes(after), output_shapes(before));
      EXPECT_LT(max_error_after(before, after), 1e-4);
    }
  }
}

TEST_P(LayoutBothWays, UnetBlockMatchesReference) {
  for (int64_t channels : {3, 7}) {
    for (int64_t spatial : {1, 5}) {
      SCOPED_TRACE("C=" + std::to_string(channels) + " S=" + std::to_string(spatial));
      const Graph before = testing::tiny_unet_block(2, channels, spatial);
      Graph after = before;
      run_layout(after, GetParam());
      expect_all_layout_aware_in(after, GetParam());
      EXPECT_FALSE(has_transpose_pair(after));
      EXPECT_EQ(output_shapes(after), output_shapes(before));
      EXPECT_LT(max_error_after(before, after), 1e-4);
    }
  }
}

TEST_P(LayoutBothWays, AfterFusionMatchesReference) {
  const Graph before = testing::tiny_unet_block(1, 7, 5);
  Graph after = before;
  run_pass(after, "fuse-elementwise");
  run_layout(after, GetParam());
  EXPECT_FALSE(has_transpose_pair(after));
  EXPECT_LT(max_error_after(before, after), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Layouts, LayoutBothWays, ::testing::Values("nchw", "nhwc"));

TEST(Layout, NchwOnNchwGraphAddsNoTransposes) {
  Graph g = testing::tiny_unet_block(1, 7, 5);
  const int before = count_ops(g, OpKind::transpose);
  run_layout(g, "nchw");
  EXPECT_EQ(count_ops(g, OpKind::transpose), before);
  EXPECT_EQ(g.annotations.at("layout.transposes_inserted"), 0);
}

TEST(Layout, ResidualBlockNeedsOnlyTheInputTranspose) {
  // Everything from the first conv to global_avg_pool stays NHWC, including the residual add;
  // the pooled [N, C] result has no layout.
  Graph g = testing::tiny_resnet(2, 7, 9);
  run_layout(g, "nhwc");
  EXPECT_EQ(count_ops(g, OpKind::transpose), 1);
  EXPECT_EQ(g.annotations.at("layout.transposes_inserted"), 1);
  for (const ir::Node& n : g.nodes()) {
    if (n.op == OpKind::add) {
      EXPECT_EQ(g.value(n.output).shape, (Shape{2, 5, 5, 14}));
    }
  }
}

TEST(Layout, CastsBetweenConvsStayInTheConvsLayout) {
  // A quantized model's activations: conv, cast to i32 and back, conv. The casts follow the
  // conv's NHWC output like any elementwise op instead of transposing around themselves.
  Graph g;
  const ValueId x = g.add_input("x", {1, 3, 9, 9});
  const ValueId c1 = add_conv(g, x, 3, 8, 3, 1, true, 1);
  const ValueId q = g.add_node(OpKind::cast, {c1}, {{"dtype", std::string("i32")}}, "q");
  const ValueId d = g.add_node(OpKind::cast, {q}, {{"dtype", std::string("f32")}}, "d");
  g.mark_output(add_conv(g, d, 8, 4, 3, 1, true, 2));
  const Graph before = g;
  run_layout(g, "nhwc");
  EXPECT_EQ(count_ops(g, OpKind::transpose), 2);  // the input in, the output back
  EXPECT_LE(max_error_after(before, g), 1e-5);
}

TEST(Layout, BroadcastOperandMovesToNhwc) {
  Graph g = testing::tiny_unet_block(2, 7, 5);
  run_layout(g, "nhwc");
  bool found = false;
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::add) continue;
    for (ValueId in : n.inputs) found = found || g.value(in).shape == Shape{2, 1, 1, 7};
  }
  EXPECT_TRUE(found) << "the [N, C, 1, 1] time embedding should be added as [N, 1, 1, C]";
}

TEST(Layout, ChannelConcatUsesLastAxis) {
  Graph g = testing::tiny_unet_block(2, 7, 5);
  run_layout(g, "nhwc");
  ASSERT_EQ(count_ops(g, OpKind::concat), 1);
  for (const ir::Node& n : g.nodes()) {
    if (n.op == OpKind::concat) {
      EXPECT_EQ(n.attrs.get_int("axis", 0), 3);
    }
  }
}

// What a U-Net decoder concatenates: an upsampled result that arrives nchw (first) and an nhwc
// skip of the same size, read by a conv. The concat runs nhwc, so only the upsampled half is
// converted (before: the concat followed its first operand, converting the skip to nchw and the
// concat's result back to nhwc for the conv).
TEST(Layout, ConcatRunsInTheLayoutMostOperandsAlreadyHave) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 3, 5, 7});
  const ValueId skip = add_conv(g, x, 3, 4, 3, 1, true, 1);
  const ValueId h = g.add_input("h", {2, 4, 5, 7});
  const ValueId up =
      g.add_node(OpKind::relu, {g.add_node(OpKind::reshape, {h}, {{"shape", Ints{2, 4, 5, 7}}})});
  const ValueId cat = g.add_node(OpKind::concat, {up, skip}, {{"axis", int64_t{1}}});
  g.mark_output(add_conv(g, cat, 8, 3, 1, 1, true, 2));
  const Graph before = g;
  run_layout(g, "nhwc");
  for (const ir::Node& n : g.nodes()) {
    if (n.op == OpKind::concat) {
      EXPECT_EQ(n.attrs.get_int("axis", 0), 3);
    }
  }
  // x in, the upsampled operand in, the result out.
  EXPECT_EQ(count_ops(g, OpKind::transpose), 3);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(Layout, LowerRankBroadcastOperand) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 3, 5, 5});
  const ValueId c = add_conv(g, x, 3, 7, 3, 1, false, 1);
  const ValueId bias = testing::random_constant(g, "bias", {7, 1, 1}, 2);
  const ValueId row = testing::random_constant(g, "row", {5}, 3);
  const ValueId y = g.add_node(OpKind::mul, {g.add_node(OpKind::add, {c, bias}), row});
  g.mark_output(g.add_node(OpKind::relu, {y}));
  const Graph before = g;
  run_layout(g, "nhwc");
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(Layout, ExistingTransposePairCancels) {
  // conv -> transpose to NHWC by hand -> relu -> back to NCHW: with an NHWC conv the hand-made
  // transposes and the inserted ones cancel.
  Graph g;
  const ValueId x = g.add_input("x", {1, 3, 5, 5});
  const ValueId c = add_conv(g, x, 3, 7, 3, 1, true, 1);
  ValueId y = g.add_node(OpKind::transpose, {c}, {{"perm", Ints{0, 2, 3, 1}}});
  y = g.add_node(OpKind::relu, {y});
  g.mark_output(g.add_node(OpKind::transpose, {y}, {{"perm", Ints{0, 3, 1, 2}}}));
  const Graph before = g;
  run_layout(g, "nhwc");
  EXPECT_FALSE(has_transpose_pair(g));
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(Layout, GraphOutputOfConvIsTransposedBack) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 3, 9, 9});
  g.mark_output(add_conv(g, x, 3, 17, 3, 2, true, 1));
  const Graph before = g;
  run_layout(g, "nhwc");
  EXPECT_EQ(g.value(g.outputs()[0]).shape, (Shape{1, 17, 5, 5}));
  EXPECT_EQ(count_ops(g, OpKind::transpose), 2);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(Layout, NhwcGraphConvertsToNchw) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 5, 5, 3}, ir::DType::f32, ir::Layout::nhwc);
  ValueId c = add_conv(g, x, 3, 7, 3, 1, true, 1, "nhwc");
  c = g.add_node(OpKind::silu, {c});
  g.mark_output(g.add_node(OpKind::max_pool2d, {c},
                           {{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}, {"layout", "nhwc"}}));
  const Graph before = g;
  run_layout(g, "nchw");
  expect_all_layout_aware_in(g, "nchw");
  EXPECT_EQ(count_ops(g, OpKind::transpose), 2);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

// Tags are hints: a user's permute(0, 2, 3, 1) tags its result nhwc while a linear layer's
// result is untagged, yet the original graph adds them as the arrays they are (Swin, ConvNeXt).
// Shapes are chosen so that transposing either operand would still not broadcast by accident.
Graph permuted_conv(ValueId* permuted) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 3, 8, 12});
  const ValueId c = add_conv(g, x, 3, 5, 3, 1, true, 1);                         // [1, 5, 8, 12]
  *permuted = g.add_node(OpKind::transpose, {c}, {{"perm", Ints{0, 2, 3, 1}}});  // [1, 8, 12, 5]
  return g;
}

TEST(Layout, OperandsWithOtherTagsAddAsTheOriginalArranged) {
  ValueId y = -1;
  Graph g = permuted_conv(&y);
  const ValueId w = testing::random_constant(g, "w", {5, 5}, 4);
  const ValueId f = g.add_node(OpKind::linear, {y, w});  // untagged
  g.mark_output(g.add_node(OpKind::add, {f, y}));
  g.mark_output(g.add_node(OpKind::mul, {y, f}));
  const Graph before = g;
  run_layout(g, "nhwc");
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(Layout, ConcatOfOtherTagsKeepsTheOriginalArrangement) {
  ValueId y = -1;
  Graph g = permuted_conv(&y);
  const ValueId r = g.add_node(OpKind::relu, {y});
  const ValueId w = testing::random_constant(g, "w", {5, 5}, 5);
  const ValueId f = g.add_node(OpKind::linear, {y, w});
  g.mark_output(g.add_node(OpKind::concat, {f, r}, {{"axis", int64_t{1}}}));
  const Graph before = g;
  run_layout(g, "nhwc");
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(Layout, ConvReadingAnNhwcTaggedValueReadsItAsItsAttributeSays) {
  // The second conv reads the permuted [1, 8, 12, 5] array as NCHW: 8 channels.
  for (const std::string layout : {"nhwc", "nchw"}) {
    ValueId y = -1;
    Graph g = permuted_conv(&y);
    g.mark_output(add_conv(g, y, 8, 4, 3, 1, true, 1));
    const Graph before = g;
    run_layout(g, layout);
    EXPECT_LT(max_error_after(before, g), 1e-4) << layout;
  }
}

}  // namespace
}  // namespace cuvil::passes
