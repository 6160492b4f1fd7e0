// The blocked layout nchw16c: shape inference for conv2d and pooling, what rejects it, the
// transposes that produce it, and the verifier's shape check.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "constant_weights.h"
#include "passes/ir/graph.h"
#include "passes/ir/verifier.h"

namespace cuvil::ir {
namespace {

using Ints = std::vector<int64_t>;

using testing::weight;

Attrs blocked(Attrs extra = {}) {
  extra.set("layout", std::string("nchw16c"));
  return extra;
}

TEST(Nchw16c, LayoutNameRoundTrips) {
  Layout l = Layout::any;
  ASSERT_TRUE(parse_layout("nchw16c", &l));
  EXPECT_EQ(l, Layout::nchw16c);
  EXPECT_EQ(to_string(Layout::nchw16c), "nchw16c");
}

TEST(Nchw16c, ConvPadsOutputChannelsToWholeBlocks) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 2, 9, 9, 16});  // 17 channels in 2 blocks
  const ValueId y = g.add_node(OpKind::conv2d, {x, weight(g, {33, 17, 3, 3}), weight(g, {33})},
                               blocked({{"stride", Ints{2, 2}}, {"pad", Ints{1, 1}}}));
  EXPECT_EQ(g.value(y).shape, (Shape{2, 3, 5, 5, 16}));
  EXPECT_EQ(g.value(y).layout, Layout::nchw16c);
}

TEST(Nchw16c, ConvWithOneChannel) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 1, 7, 3, 16});
  const ValueId y = g.add_node(OpKind::conv2d, {x, weight(g, {1, 1, 1, 1})}, blocked());
  EXPECT_EQ(g.value(y).shape, (Shape{1, 1, 7, 3, 16}));
}

TEST(Nchw16c, ConvRejectsWrongBlockCount) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 2, 5, 5, 16});  // 17..32 channels, weight says 7
  EXPECT_THROW(g.add_node(OpKind::conv2d, {x, weight(g, {8, 7, 3, 3})}, blocked()), UserError);
}

TEST(Nchw16c, ConvRejectsGroups) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 1, 5, 5, 16});
  EXPECT_THROW(
      g.add_node(OpKind::conv2d, {x, weight(g, {4, 8, 3, 3})}, blocked({{"groups", int64_t{2}}})),
      UserError);
}

TEST(Nchw16c, ConvRejectsRank4Input) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 16, 5, 5});
  EXPECT_THROW(g.add_node(OpKind::conv2d, {x, weight(g, {4, 16, 3, 3})}, blocked()), UserError);
}

TEST(Nchw16c, ConvRejectsLanesOtherThan16) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 1, 5, 5, 8});
  EXPECT_THROW(g.add_node(OpKind::conv2d, {x, weight(g, {4, 8, 3, 3})}, blocked()), UserError);
}

TEST(Nchw16c, PoolKeepsBlocks) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 3, 7, 7, 16});
  const ValueId y =
      g.add_node(OpKind::max_pool2d, {x},
                 blocked({{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"pad", Ints{1, 1}}}));
  EXPECT_EQ(g.value(y).shape, (Shape{1, 3, 4, 4, 16}));
  EXPECT_EQ(g.value(y).layout, Layout::nchw16c);
}

TEST(Nchw16c, NormsGlobalPoolAndUpsampleRejectIt) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 1, 4, 4, 16});
  const ValueId c = weight(g, {16});
  EXPECT_THROW(g.add_node(OpKind::batch_norm, {x, c, c, c, c}, blocked()), UserError);
  EXPECT_THROW(g.add_node(OpKind::group_norm, {x, c, c}, blocked({{"groups", int64_t{4}}})),
               UserError);
  EXPECT_THROW(g.add_node(OpKind::global_avg_pool, {x}, blocked()), UserError);
  EXPECT_THROW(g.add_node(OpKind::upsample_nearest2d, {x}, blocked()), UserError);
}

TEST(Nchw16c, TransposeIntoBlocksTagsTheLayout) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 2, 16, 5, 3});  // [N, Cb, 16, H, W]
  const ValueId y = g.add_node(OpKind::transpose, {x}, {{"perm", Ints{0, 1, 3, 4, 2}}});
  EXPECT_EQ(g.value(y).shape, (Shape{1, 2, 5, 3, 16}));
  EXPECT_EQ(g.value(y).layout, Layout::nchw16c);
}

TEST(Nchw16c, VerifierRejectsBlockedValueWithoutLanes) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 16, 4, 4});
  const ValueId y = g.add_node(OpKind::relu, {x});
  g.mark_output(y);
  g.mutable_value(y).layout = Layout::nchw16c;
  EXPECT_THROW(verify(g), UserError);
}

}  // namespace
}  // namespace cuvil::ir
