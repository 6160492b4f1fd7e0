#include <gtest/gtest.h>

#include "passes/ir/graph.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using testing::add_batch_norm;
using testing::add_conv;
using testing::count_ops;
using testing::max_error_after;
using testing::run_pass;

Graph conv_bn(int64_t channels, int64_t spatial, bool bias, const std::string& layout,
              int64_t groups = 1) {
  Graph g;
  const int64_t in_c = groups == 1 ? 3 : channels;
  const ir::Shape shape = layout == "nhwc" ? ir::Shape{2, spatial, spatial, in_c}
                                           : ir::Shape{2, in_c, spatial, spatial};
  const ValueId x = g.add_input("x", shape, ir::DType::f32,
                                layout == "nhwc" ? ir::Layout::nhwc : ir::Layout::nchw);
  const ValueId c = add_conv(g, x, in_c, channels, 3, 1, bias, 100 + channels, layout, groups);
  g.mark_output(g.add_node(OpKind::relu, {add_batch_norm(g, c, channels, 200, layout)}));
  return g;
}

TEST(FoldBatchNorm, FoldsAcrossOddSizesNchw) {
  for (int64_t channels : {3, 7, 17}) {
    for (int64_t spatial : {1, 5, 9}) {
      for (bool bias : {false, true}) {
        SCOPED_TRACE("C=" + std::to_string(channels) + " S=" + std::to_string(spatial));
        const Graph before = conv_bn(channels, spatial, bias, "nchw");
        Graph after = before;
        run_pass(after, "fold-batchnorm");
        EXPECT_EQ(count_ops(after, OpKind::batch_norm), 0);
        EXPECT_LT(max_error_after(before, after), 1e-4);
      }
    }
  }
}

TEST(FoldBatchNorm, FoldsInNhwc) {
  for (int64_t channels : {3, 7, 17}) {
    const Graph before = conv_bn(channels, 5, true, "nhwc");
    Graph after = before;
    run_pass(after, "fold-batchnorm");
    EXPECT_EQ(count_ops(after, OpKind::batch_norm), 0);
    EXPECT_LT(max_error_after(before, after), 1e-4);
  }
}

TEST(FoldBatchNorm, FoldsDepthwiseConv) {
  const Graph before = conv_bn(7, 5, false, "nchw", 7);
  Graph after = before;
  run_pass(after, "fold-batchnorm");
  EXPECT_EQ(count_ops(after, OpKind::batch_norm), 0);
  EXPECT_LT(max_error_after(before, after), 1e-4);
}

TEST(FoldBatchNorm, CountsFoldsInAnnotation) {
  Graph g = testing::tiny_resnet(1, 7, 9);
  run_pass(g, "fold-batchnorm");
  EXPECT_EQ(g.annotations.at("fold-batchnorm.folded"), 4);
}

TEST(FoldBatchNorm, FoldedWeightKeepsConvShape) {
  Graph g = conv_bn(7, 5, false, "nchw");
  run_pass(g, "fold-batchnorm");
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::conv2d) continue;
    EXPECT_EQ(g.value(n.inputs[1]).shape, (ir::Shape{7, 3, 3, 3}));
    ASSERT_EQ(n.inputs.size(), 3u);
    EXPECT_EQ(g.value(n.inputs[2]).shape, (ir::Shape{7}));
  }
}

TEST(FoldBatchNorm, LeavesSharedWeightsUntouched) {
  const Graph before = conv_bn(7, 5, true, "nchw");
  const ValueId w = before.nodes()[0].inputs[1];
  const std::vector<float> original = before.constant_data(w);  // materialised and shared
  Graph after = before;
  run_pass(after, "fold-batchnorm");
  EXPECT_EQ(before.constant_data(w), original);
  EXPECT_EQ(after.constant_data(w), original);
}

TEST(FoldBatchNorm, KeepsBnWhenConvResultHasOtherUsers) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 3, 5, 5});
  const ValueId c = add_conv(g, x, 3, 7, 3, 1, false, 1);
  const ValueId bn = add_batch_norm(g, c, 7, 2);
  g.mark_output(g.add_node(OpKind::add, {bn, c}));
  const Graph before = g;
  run_pass(g, "fold-batchnorm");
  EXPECT_EQ(count_ops(g, OpKind::batch_norm), 1);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

TEST(FoldBatchNorm, KeepsBnWhenConvResultIsGraphOutput) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 3, 5, 5});
  const ValueId c = add_conv(g, x, 3, 7, 3, 1, false, 1);
  g.mark_output(c);
  g.mark_output(add_batch_norm(g, c, 7, 2));
  run_pass(g, "fold-batchnorm");
  EXPECT_EQ(count_ops(g, OpKind::batch_norm), 1);
}

TEST(FoldBatchNorm, KeepsBnAfterOtherOps) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 7, 5, 5});
  g.mark_output(add_batch_norm(g, g.add_node(OpKind::relu, {x}), 7, 2));
  run_pass(g, "fold-batchnorm");
  EXPECT_EQ(count_ops(g, OpKind::batch_norm), 1);
}

TEST(FoldBatchNorm, FoldsTwoBatchNormsInARow) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 3, 5, 5});
  const ValueId c = add_conv(g, x, 3, 7, 3, 1, true, 1);
  g.mark_output(add_batch_norm(g, add_batch_norm(g, c, 7, 2), 7, 9));
  const Graph before = g;
  run_pass(g, "fold-batchnorm");
  EXPECT_EQ(count_ops(g, OpKind::batch_norm), 0);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

// PyTorch's QAT export of conv + BN: conv(x, w) / factor[1, C, 1, 1], then BN.
Graph conv_scale_bn(int64_t channels, OpKind op, ir::Shape factor_shape, bool bn) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 3, 7, 7});
  const ValueId c = add_conv(g, x, 3, channels, 3, 1, false, 5);
  const ValueId f = testing::random_constant(g, "factor", factor_shape, 6);
  ValueId y = g.add_node(op, {c, f}, {}, "rescale");
  if (bn) y = add_batch_norm(g, y, channels, 8);
  g.mark_output(g.add_node(OpKind::relu, {y}));
  return g;
}

TEST(FoldBatchNorm, FoldsAPerChannelDivideAndTheBnAfterIt) {
  for (int64_t channels : {1, 7, 17}) {
    SCOPED_TRACE("C=" + std::to_string(channels));
    const Graph before = conv_scale_bn(channels, OpKind::div, {1, channels, 1, 1}, true);
    Graph after = before;
    run_pass(after, "fold-batchnorm");
    EXPECT_EQ(count_ops(after, OpKind::div), 0);
    EXPECT_EQ(count_ops(after, OpKind::batch_norm), 0);
    EXPECT_EQ(after.annotations.at("fold-batchnorm.scales_folded"), 1);
    EXPECT_LT(max_error_after(before, after), 1e-4);
  }
}

TEST(FoldBatchNorm, FoldsPerChannelAndScalarMultiplies) {
  for (const ir::Shape& shape : {ir::Shape{7, 1, 1}, ir::Shape{}, ir::Shape{1, 1, 1, 1}}) {
    const Graph before = conv_scale_bn(7, OpKind::mul, shape, false);
    Graph after = before;
    run_pass(after, "fold-batchnorm");
    EXPECT_EQ(count_ops(after, OpKind::mul), 0) << ir::to_string(shape);
    EXPECT_LT(max_error_after(before, after), 1e-4);
  }
}

TEST(FoldBatchNorm, KeepsAMultiplyThatVariesOverPixels) {
  for (const ir::Shape& shape : {ir::Shape{1, 7, 7, 7}, ir::Shape{7}, ir::Shape{2, 7, 1, 1}}) {
    Graph g = conv_scale_bn(7, OpKind::mul, shape, false);
    run_pass(g, "fold-batchnorm");
    EXPECT_EQ(count_ops(g, OpKind::mul), 1) << ir::to_string(shape);
  }
}

TEST(FoldBatchNorm, KeepsADivideOfAConstantByTheConv) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 3, 7, 7});
  const ValueId c = add_conv(g, x, 3, 7, 3, 1, true, 5);
  const ValueId f = testing::random_constant(g, "factor", {1, 7, 1, 1}, 6);
  g.mark_output(g.add_node(OpKind::div, {f, c}, {}, "inverse"));
  run_pass(g, "fold-batchnorm");
  EXPECT_EQ(count_ops(g, OpKind::div), 1);
}

TEST(FoldBatchNorm, SecondBnStaysWhenFirstHasTwoUsers) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 3, 5, 5});
  const ValueId c = add_conv(g, x, 3, 7, 3, 1, true, 1);
  const ValueId bn1 = add_batch_norm(g, c, 7, 2);
  g.mark_output(g.add_node(OpKind::add, {add_batch_norm(g, bn1, 7, 9), bn1}));
  const Graph before = g;
  run_pass(g, "fold-batchnorm");
  EXPECT_EQ(count_ops(g, OpKind::batch_norm), 1);
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

}  // namespace
}  // namespace cuvil::passes
