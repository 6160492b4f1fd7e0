// Shape inference, one op (and one must-fail case) per test.
#include <gtest/gtest.h>

#include "base/error.h"
#include "constant_weights.h"
#include "passes/ir/graph.h"
#include "passes/ir/shape_inference.h"

namespace cuvil::ir {
namespace {

using Ints = std::vector<int64_t>;

using testing::weight;

TEST(ShapeInference, Conv2dStridePadNchw) {
  Graph g;
  ValueId x = g.add_input("x", {2, 3, 17, 17});
  ValueId y = g.add_node(OpKind::conv2d, {x, weight(g, {8, 3, 3, 3}), weight(g, {8})},
                         {{"stride", Ints{2, 2}}, {"pad", Ints{1, 1}}});
  EXPECT_EQ(g.value(y).shape, (Shape{2, 8, 9, 9}));
  EXPECT_EQ(g.value(y).layout, Layout::nchw);
}

TEST(ShapeInference, Conv2dNhwcIsPhysical) {
  Graph g;
  ValueId x = g.add_input("x", {1, 7, 7, 3}, DType::f32, Layout::nhwc);
  ValueId y = g.add_node(OpKind::conv2d, {x, weight(g, {5, 3, 1, 1})}, {{"layout", "nhwc"}});
  EXPECT_EQ(g.value(y).shape, (Shape{1, 7, 7, 5}));
  EXPECT_EQ(g.value(y).layout, Layout::nhwc);
}

TEST(ShapeInference, Conv2dGroups) {
  Graph g;
  ValueId x = g.add_input("x", {1, 6, 5, 5});
  ValueId y = g.add_node(OpKind::conv2d, {x, weight(g, {6, 1, 3, 3})}, {{"groups", int64_t{6}}});
  EXPECT_EQ(g.value(y).shape, (Shape{1, 6, 3, 3}));
}

TEST(ShapeInference, Conv2dDilationWidensTheWindow) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 17, 17});
  // A 3x3 kernel dilated {2, 3} spans 5 x 7 input pixels.
  ValueId y = g.add_node(OpKind::conv2d, {x, weight(g, {4, 3, 3, 3})},
                         {{"pad", Ints{2, 1}}, {"dilation", Ints{2, 3}}});
  EXPECT_EQ(g.value(y).shape, (Shape{1, 4, 17, 13}));
}

TEST(ShapeInference, Conv2dRejectsChannelMismatch) {
  Graph g;
  ValueId x = g.add_input("x", {1, 4, 5, 5});
  EXPECT_THROW(g.add_node(OpKind::conv2d, {x, weight(g, {6, 3, 3, 3})}), UserError);
}

TEST(ShapeInference, Conv2dRejectsEmptyOutput) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 2, 2});
  EXPECT_THROW(g.add_node(OpKind::conv2d, {x, weight(g, {6, 3, 3, 3})}), UserError);
  // Padded 4 pixels wide, a 5-wide window does not fit, whatever the stride.
  EXPECT_THROW(g.add_node(OpKind::conv2d, {x, weight(g, {6, 3, 5, 5})},
                          {{"pad", Ints{1, 1}}, {"stride", Ints{2, 2}}}),
               UserError);
}

TEST(ShapeInference, LinearUsesOutInWeight) {
  Graph g;
  ValueId x = g.add_input("x", {2, 7, 17});
  ValueId y = g.add_node(OpKind::linear, {x, weight(g, {3, 17}), weight(g, {3})});
  EXPECT_EQ(g.value(y).shape, (Shape{2, 7, 3}));
}

TEST(ShapeInference, LinearRejectsInnerMismatch) {
  Graph g;
  ValueId x = g.add_input("x", {2, 16});
  EXPECT_THROW(g.add_node(OpKind::linear, {x, weight(g, {3, 17})}), UserError);
}

TEST(ShapeInference, MatmulBroadcastsBatch) {
  Graph g;
  ValueId a = g.add_input("a", {4, 1, 3, 5});
  ValueId b = g.add_input("b", {7, 5, 2});
  ValueId y = g.add_node(OpKind::matmul, {a, b});
  EXPECT_EQ(g.value(y).shape, (Shape{4, 7, 3, 2}));
}

TEST(ShapeInference, BinaryBroadcast) {
  Graph g;
  ValueId a = g.add_input("a", {2, 320, 9, 9});
  ValueId b = g.add_input("b", {2, 320, 1, 1});
  EXPECT_EQ(g.value(g.add_node(OpKind::add, {a, b})).shape, (Shape{2, 320, 9, 9}));
  EXPECT_EQ(g.value(g.add_node(OpKind::mul, {b, a})).shape, (Shape{2, 320, 9, 9}));
}

TEST(ShapeInference, BinaryRejectsIncompatible) {
  Graph g;
  ValueId a = g.add_input("a", {2, 3});
  ValueId b = g.add_input("b", {2, 4});
  EXPECT_THROW(g.add_node(OpKind::sub, {a, b}), UserError);
}

TEST(ShapeInference, NormsKeepShape) {
  Graph g;
  ValueId x = g.add_input("x", {1, 64, 3, 3});
  ValueId c = weight(g, {64});
  EXPECT_EQ(g.value(g.add_node(OpKind::batch_norm, {x, c, c, c, c})).shape, (Shape{1, 64, 3, 3}));
  EXPECT_EQ(g.value(g.add_node(OpKind::group_norm, {x, c, c}, {{"groups", int64_t{32}}})).shape,
            (Shape{1, 64, 3, 3}));
  ValueId t = g.add_input("t", {1, 7, 64});
  EXPECT_EQ(g.value(g.add_node(OpKind::layer_norm, {t, c, c})).shape, (Shape{1, 7, 64}));
  EXPECT_EQ(g.value(g.add_node(OpKind::rms_norm, {t, c})).shape, (Shape{1, 7, 64}));
}

TEST(ShapeInference, GroupNormRejectsIndivisibleGroups) {
  Graph g;
  ValueId x = g.add_input("x", {1, 17, 3, 3});
  ValueId c = weight(g, {17});
  EXPECT_THROW(g.add_node(OpKind::group_norm, {x, c, c}, {{"groups", int64_t{4}}}), UserError);
}

TEST(ShapeInference, SdpaGroupedQueryDecode) {
  Graph g;
  ValueId q = g.add_input("q", {1, 32, 1, 128});
  ValueId k = g.add_input("k", {1, 8, 513, 128});
  ValueId v = g.add_input("v", {1, 8, 513, 128});
  ValueId y = g.add_node(OpKind::sdpa, {q, k, v}, {{"causal", int64_t{1}}});
  EXPECT_EQ(g.value(y).shape, (Shape{1, 32, 1, 128}));
}

TEST(ShapeInference, SdpaRejectsHeadsNotMultiple) {
  Graph g;
  ValueId q = g.add_input("q", {1, 6, 3, 8});
  ValueId k = g.add_input("k", {1, 4, 3, 8});
  EXPECT_THROW(g.add_node(OpKind::sdpa, {q, k, k}), UserError);
}

TEST(ShapeInference, SdpaRejectsCausalWithMoreQueriesThanKeys) {
  Graph g;
  ValueId q = g.add_input("q", {1, 2, 5, 8});
  ValueId k = g.add_input("k", {1, 2, 3, 8});
  EXPECT_THROW(g.add_node(OpKind::sdpa, {q, k, k}, {{"causal", int64_t{1}}}), UserError);
}

TEST(ShapeInference, RopeRejectsOddHeadDim) {
  Graph g;
  ValueId x = g.add_input("x", {1, 2, 3, 7});
  EXPECT_THROW(g.add_node(OpKind::rope, {x}), UserError);
}

TEST(ShapeInference, PoolsAtOddSizes) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 17, 17});
  Attrs a{{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"pad", Ints{1, 1}}};
  EXPECT_EQ(g.value(g.add_node(OpKind::max_pool2d, {x}, a)).shape, (Shape{1, 3, 9, 9}));
  EXPECT_EQ(g.value(g.add_node(OpKind::avg_pool2d, {x}, a)).shape, (Shape{1, 3, 9, 9}));
  EXPECT_EQ(g.value(g.add_node(OpKind::global_avg_pool, {x})).shape, (Shape{1, 3}));
}

TEST(ShapeInference, UpsampleNhwc) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 5, 7});
  ValueId y = g.add_node(OpKind::upsample_nearest2d, {x}, {{"layout", "nhwc"}});
  EXPECT_EQ(g.value(y).shape, (Shape{1, 6, 10, 7}));
}

TEST(ShapeInference, ConcatAndSlice) {
  Graph g;
  ValueId a = g.add_input("a", {1, 3, 4});
  ValueId b = g.add_input("b", {1, 5, 4});
  ValueId c = g.add_node(OpKind::concat, {a, b}, {{"axis", int64_t{1}}});
  EXPECT_EQ(g.value(c).shape, (Shape{1, 8, 4}));
  ValueId s = g.add_node(OpKind::slice, {c},
                         {{"axis", int64_t{-1}}, {"start", int64_t{1}}, {"end", int64_t{3}}});
  EXPECT_EQ(g.value(s).shape, (Shape{1, 8, 2}));
}

TEST(ShapeInference, ConcatRejectsMismatchOffAxis) {
  Graph g;
  ValueId a = g.add_input("a", {1, 3, 4});
  ValueId b = g.add_input("b", {1, 3, 5});
  EXPECT_THROW(g.add_node(OpKind::concat, {a, b}, {{"axis", int64_t{1}}}), UserError);
}

TEST(ShapeInference, SliceRejectsOutOfRange) {
  Graph g;
  ValueId a = g.add_input("a", {4});
  EXPECT_THROW(g.add_node(OpKind::slice, {a}, {{"start", int64_t{2}}, {"end", int64_t{5}}}),
               UserError);
}

TEST(ShapeInference, ReshapeInfersWildcard) {
  Graph g;
  ValueId x = g.add_input("x", {2, 7, 64});
  ValueId y = g.add_node(OpKind::reshape, {x}, {{"shape", Ints{2, 7, 4, -1}}});
  EXPECT_EQ(g.value(y).shape, (Shape{2, 7, 4, 16}));
}

TEST(ShapeInference, ReshapeRejectsWrongCount) {
  Graph g;
  ValueId x = g.add_input("x", {2, 7});
  EXPECT_THROW(g.add_node(OpKind::reshape, {x}, {{"shape", Ints{3, 5}}}), UserError);
}

TEST(ShapeInference, TransposeToNhwcSetsLayout) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 5, 7});
  ValueId y = g.add_node(OpKind::transpose, {x}, {{"perm", Ints{0, 2, 3, 1}}});
  EXPECT_EQ(g.value(y).shape, (Shape{1, 5, 7, 3}));
  EXPECT_EQ(g.value(y).layout, Layout::nhwc);
}

TEST(ShapeInference, TransposeRejectsNonPermutation) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 5});
  EXPECT_THROW(g.add_node(OpKind::transpose, {x}, {{"perm", Ints{0, 0, 1}}}), UserError);
}

TEST(ShapeInference, EmbeddingAppendsDim) {
  Graph g;
  ValueId t = weight(g, {97, 16});
  ValueId ids = g.add_input("ids", {2, 7}, DType::i32);
  EXPECT_EQ(g.value(g.add_node(OpKind::embedding, {t, ids})).shape, (Shape{2, 7, 16}));
}

TEST(ShapeInference, EmbeddingRejectsFloatIds) {
  Graph g;
  ValueId t = weight(g, {97, 16});
  ValueId ids = g.add_input("ids", {2, 7});
  EXPECT_THROW(g.add_node(OpKind::embedding, {t, ids}), UserError);
}

TEST(ShapeInference, CastGivesItsTargetDtype) {
  Graph g;
  ValueId x = g.add_input("x", {2, 7});
  ValueId i = g.add_node(OpKind::cast, {x}, {{"dtype", std::string("i32")}});
  EXPECT_EQ(g.value(i).dtype, DType::i32);
  EXPECT_EQ(g.value(i).shape, (Shape{2, 7}));
  EXPECT_EQ(g.value(g.add_node(OpKind::cast, {i}, {{"dtype", std::string("f32")}})).dtype,
            DType::f32);
  EXPECT_THROW(g.add_node(OpKind::cast, {x}, {{"dtype", std::string("i64")}}), UserError);
  EXPECT_THROW(g.add_node(OpKind::cast, {x}), UserError);
}

// Positions computed at run time (ArgMax) stay integers through max, sum and where.
TEST(ShapeInference, MaxSumAndWhereOfIntegersStayIntegers) {
  Graph g;
  ValueId ids = g.add_input("ids", {2, 7}, DType::i32);
  ValueId x = g.add_input("x", {2, 7});
  const Attrs axis1 = {{"axes", Ints{1}}};
  EXPECT_EQ(g.value(g.add_node(OpKind::reduce_max, {ids}, axis1)).dtype, DType::i32);
  EXPECT_EQ(g.value(g.add_node(OpKind::reduce_sum, {ids}, axis1)).dtype, DType::i32);
  EXPECT_EQ(g.value(g.add_node(OpKind::reduce_max, {x}, axis1)).dtype, DType::f32);
  EXPECT_EQ(g.value(g.add_node(OpKind::reduce_mean, {ids}, axis1)).dtype, DType::f32);
  EXPECT_EQ(g.value(g.add_node(OpKind::where, {x, ids, ids})).dtype, DType::i32);
  EXPECT_EQ(g.value(g.add_node(OpKind::where, {ids, x, ids})).dtype, DType::f32);
}

TEST(ShapeInference, ErrorNamesTheNode) {
  Graph g;
  ValueId x = g.add_input("x", {2, 16});
  try {
    g.add_node(OpKind::linear, {x, weight(g, {3, 17})}, {}, "block3.fc");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("block3.fc"), std::string::npos) << e.what();
  }
}

// infer_node on nodes that carry fused epilogue operands.
TEST(Graph, EpilogueOperandMustNotChangeShape) {
  Graph g;
  ValueId x = g.add_input("x", {3, 1});
  ValueId b = g.add_input("b", {3, 4});
  g.add_node(OpKind::relu, {x});
  Node bad = g.nodes()[0];
  bad.inputs.push_back(b);
  bad.epilogue = {{OpKind::add, 1}};  // broadcasting [3,1] up to [3,4] would change the shape
  Value out;
  EXPECT_THROW(infer_node(g, bad, &out), UserError);
}

TEST(Graph, EpilogueOperandsFollowTheOpsInputs) {
  Graph g;
  ValueId x = g.add_input("x", {3, 5});
  ValueId w = g.add_constant("w", {4, 5}, ConstantInit::fill(1));
  ValueId r = g.add_input("r", {3, 4});
  g.add_node(OpKind::linear, {x, w});
  Node fused = g.nodes()[0];
  fused.inputs.push_back(r);  // a residual, not a bias
  fused.epilogue = {{OpKind::add, 2}, {OpKind::relu, -1}};
  EXPECT_EQ(fused.op_input_count(), 2u);
  Value out;
  infer_node(g, fused, &out);
  EXPECT_EQ(out.shape, (Shape{3, 4}));
  fused.epilogue = {{OpKind::add, 0}};  // must read the appended operand, not an op input
  EXPECT_THROW(infer_node(g, fused, &out), UserError);
}

// Attributes a file may set to anything: shape arithmetic that would overflow int64, or a result
// past ir::kMaxElements, is a UserError naming the node, never undefined behaviour.
constexpr int64_t kHuge = int64_t{1} << 62;

void expect_refused(Graph& g, OpKind op, std::vector<ValueId> in, Attrs attrs,
                    const std::string& why) {
  try {
    g.add_node(op, std::move(in), std::move(attrs), "n");
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(ShapeBounds, PadThatOverflowsIsRefused) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3});
  expect_refused(g, OpKind::pad, {x}, {{"pads", Ints{0, kHuge, 0, kHuge}}}, "overflows int64");
}

TEST(ShapeBounds, ConvDilationBelowOneOrPastTheImageIsRefused) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 7, 7});
  expect_refused(g, OpKind::conv2d, {x, weight(g, {4, 3, 3, 3})}, {{"dilation", Ints{0, 1}}},
                 "dilation [0, 1] must be >= 1");
  expect_refused(g, OpKind::conv2d, {x, weight(g, {4, 3, 3, 3})}, {{"dilation", Ints{4, 1}}},
                 "output would be empty");
  expect_refused(g, OpKind::conv2d, {x, weight(g, {4, 3, 3, 3})}, {{"dilation", Ints{kHuge, 1}}},
                 "overflows int64");
  expect_refused(g, OpKind::conv2d, {x, weight(g, {4, 3, 3, 3})}, {{"dilation", Ints{2}}},
                 "'dilation' must have 2 entries");
}

TEST(ShapeBounds, PadPastTheElementBoundIsRefused) {
  Graph g;
  ValueId x = g.add_input("x", {1024, 3});
  expect_refused(g, OpKind::pad, {x}, {{"pads", Ints{0, 0, 0, int64_t{1} << 31}}},
                 "more than 2^40 elements");
}

TEST(ShapeBounds, ConvAndPoolPaddingThatOverflowsIsRefused) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 7, 7});
  expect_refused(g, OpKind::conv2d, {x, weight(g, {4, 3, 3, 3})}, {{"pad", Ints{kHuge, kHuge}}},
                 "overflows int64");
  expect_refused(g, OpKind::max_pool2d, {x},
                 {{"kernel", Ints{INT64_MAX, 3}}, {"pad", Ints{INT64_MAX / 2, 1}}},
                 "overflows int64");
  expect_refused(g, OpKind::avg_pool2d, {x}, {{"kernel", Ints{3, 3}}, {"pad", Ints{-1, 0}}},
                 "pad [-1, 0] must be >= 0");
}

TEST(ShapeBounds, GroupsThatDoNotDivideTheChannelsAreRefused) {
  Graph g;
  ValueId x = g.add_input("x", {1, 6, 8, 8});
  expect_refused(g, OpKind::conv2d, {x, weight(g, {4, 3, 3, 3})}, {{"groups", int64_t{4}}},
                 "groups 4 must be >= 1 and divide the 6 input and 4 output channels");
  expect_refused(g, OpKind::conv2d, {x, weight(g, {4, 3, 3, 3})}, {{"groups", int64_t{0}}},
                 "groups 0 must be >= 1");
}

// The refusal keeps the node, its op and what is wrong apart, for front ends that name nodes
// their own way (the ONNX importer).
TEST(ShapeBounds, ARefusalNamesTheNodeAndOpApartFromTheDetail) {
  Graph g;
  ValueId x = g.add_input("x", {1, 6, 8, 8});
  try {
    g.add_node(OpKind::conv2d, {x, weight(g, {4, 3, 3, 3})}, {{"groups", int64_t{4}}}, "c1");
    ADD_FAILURE() << "accepted";
  } catch (const InvalidNode& e) {
    EXPECT_EQ(e.node(), "c1");
    EXPECT_EQ(e.op(), "conv2d");
    EXPECT_EQ(e.detail(), "groups 4 must be >= 1 and divide the 6 input and 4 output channels");
    EXPECT_EQ(std::string(e.what()), "node 'c1' (conv2d): " + e.detail());
  }
}

TEST(ShapeBounds, GroupsThatOverflowAreRefused) {
  Graph g;
  ValueId x = g.add_input("x", {1, 0, 7, 7});
  expect_refused(g, OpKind::conv2d, {x, weight(g, {0, int64_t{1} << 40, 1, 1})},
                 {{"groups", int64_t{1} << 40}}, "overflows int64");
}

TEST(ShapeBounds, ReshapeUpsampleAndConcatThatOverflowAreRefused) {
  Graph g;
  ValueId x = g.add_input("x", {2, 3, 4, 4});
  expect_refused(g, OpKind::reshape, {x}, {{"shape", Ints{kHuge, kHuge, -1}}}, "overflows int64");
  expect_refused(g, OpKind::upsample_nearest2d, {x}, {{"scale", kHuge}}, "overflows int64");
  ValueId big = g.add_input("big", {int64_t{1} << 40, 0});
  expect_refused(g, OpKind::concat, {big, big}, {{"axis", int64_t{0}}}, "more than 2^40");
}

TEST(ShapeBounds, DeclaredShapesAreBoundedToo) {
  Graph g;
  EXPECT_THROW(g.add_input("x", {-1, 3}), UserError);
  EXPECT_THROW(g.add_input("x", {int64_t{1} << 21, int64_t{1} << 20}), UserError);
  EXPECT_THROW(g.add_constant("w", {int64_t{1} << 41, 0}, ConstantInit::fill(1)), UserError);
  EXPECT_NO_THROW(g.add_input("ok", {int64_t{1} << 20, int64_t{1} << 20}));
}

TEST(ShapeBounds, BoundedElementsCountsWithoutOverflow) {
  EXPECT_EQ(bounded_elements({2, 3, 7}), 42);
  EXPECT_EQ(bounded_elements({}), 1);
  EXPECT_EQ(bounded_elements({0, 5}), 0);
  EXPECT_EQ(bounded_elements({kHuge, 0}), -1);  // a dimension past the bound, even if empty
  EXPECT_EQ(bounded_elements({int64_t{1} << 30, int64_t{1} << 30}), -1);
  EXPECT_EQ(bounded_elements({3, -1}), -1);
  EXPECT_EQ(bounded_elements({17, 3}, 50), -1);
}

}  // namespace
}  // namespace cuvil::ir
