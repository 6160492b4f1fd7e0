// The frame tree: totals, self weights, path lookup and the differential annotation.
#include <gtest/gtest.h>

#include "reports/flame/frame_tree.h"

namespace cuvil::reports::flame {
namespace {

TEST(FlameTree, TotalsAddUpTheStacksAboveEachFrame) {
  FrameTree tree;
  tree.add_stack({"a", "b"}, 3);
  tree.add_stack({"a", "c"}, 7);
  tree.add_stack({"a"}, 1);
  EXPECT_DOUBLE_EQ(tree.total(), 11);
  const FrameNode* a = tree.find({"a"});
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->total, 11);
  EXPECT_DOUBLE_EQ(a->self, 1);
  EXPECT_DOUBLE_EQ(tree.find({"a", "c"})->total, 7);
  EXPECT_EQ(tree.find({"a", "x"}), nullptr);
  EXPECT_EQ(tree.depth(), 2u);
}

TEST(FlameTree, RepeatedStacksMergeAndChildrenKeepFirstSeenOrder) {
  FrameTree tree;
  tree.add_stack({"z"}, 1);
  tree.add_stack({"a"}, 1);
  tree.add_stack({"z"}, 17);
  ASSERT_EQ(tree.root().children.size(), 2u);
  EXPECT_EQ(tree.root().children[0]->name, "z");
  EXPECT_DOUBLE_EQ(tree.root().children[0]->total, 18);
  EXPECT_EQ(tree.root().children[1]->name, "a");
}

TEST(FlameTree, AnEmptyTreeHasNoDepthAndNoWeight) {
  FrameTree tree("root", "samples");
  EXPECT_TRUE(tree.empty());
  EXPECT_EQ(tree.depth(), 0u);
  EXPECT_DOUBLE_EQ(tree.total(), 0);
  EXPECT_EQ(tree.root().name, "root");
  EXPECT_EQ(tree.unit(), "samples");
}

TEST(FlameTree, BaseAnnotationMatchesFramesByPath) {
  FrameTree base, now;
  base.add_stack({"a", "b"}, 10);
  base.add_stack({"a", "gone"}, 5);
  base.add_stack({"x", "b"}, 3);  // same name "b", different path
  now.add_stack({"a", "b"}, 13);
  now.add_stack({"a", "new"}, 1);
  now.add_stack({"x", "b"}, 3);
  now.annotate_with_base(base);
  EXPECT_TRUE(now.differential());
  const FrameNode* ab = now.find({"a", "b"});
  EXPECT_TRUE(ab->in_base);
  EXPECT_DOUBLE_EQ(ab->base_total, 10);
  EXPECT_DOUBLE_EQ(now.find({"x", "b"})->base_total, 3);
  EXPECT_FALSE(now.find({"a", "new"})->in_base);
  EXPECT_DOUBLE_EQ(now.find({"a"})->base_total, 15);
  EXPECT_DOUBLE_EQ(now.total_only_in_base(), 5);
}

TEST(FlameTree, BaseWeightsCanBeScaledToCompareShares) {
  FrameTree base("all", "samples"), now("all", "samples");
  base.add_stack({"a"}, 3);
  base.add_stack({"gone"}, 1);
  now.add_stack({"a"}, 7);
  now.annotate_with_base(base, 2.0);
  EXPECT_DOUBLE_EQ(now.find({"a"})->base_total, 6);
  EXPECT_DOUBLE_EQ(now.total_only_in_base(), 2);
}

}  // namespace
}  // namespace cuvil::reports::flame
