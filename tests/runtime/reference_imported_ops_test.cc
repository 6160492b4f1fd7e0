// The reference interpreter on the ops imported models add (tanh .. leaky_relu, pow/max/min,
// reductions, pad, gather, where, expand, avg_pool2d without padding in its divisor), on small
// hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "passes/ir/graph.h"
#include "tests/runtime/reference_test_util.h"

namespace cuvil::runtime::reference::testing {
namespace {

using ir::Attrs;
using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using Ints = std::vector<int64_t>;

Tensor unary(OpKind op, const std::vector<float>& x, Attrs attrs = {}) {
  Graph g;
  const ValueId y = g.add_node(op, {g.add_input("x", {static_cast<int64_t>(x.size())})}, attrs);
  return run_one(g, y, {Tensor({static_cast<int64_t>(x.size())}, x)});
}

TEST(ReferenceUnary, TranscendentalsMatchTheLibrary) {
  const std::vector<float> x = {-2.5f, -0.3f, 0.0f, 0.7f, 3.0f};
  auto expect = [&](OpKind op, double (*f)(double)) {
    const Tensor y = unary(op, x);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y.data[i], f(x[i]), 1e-6) << i;
  };
  expect(OpKind::tanh, [](double v) { return std::tanh(v); });
  expect(OpKind::erf, [](double v) { return std::erf(v); });
  expect(OpKind::exp, [](double v) { return std::exp(v); });
  expect(OpKind::neg, [](double v) { return -v; });
  expect(OpKind::abs, [](double v) { return std::fabs(v); });
  const Tensor s = unary(OpKind::sqrt, {0.0f, 4.0f, 2.25f});
  expect_all_near(s.data, {0.0f, 2.0f, 1.5f}, 1e-7);
  const Tensor l = unary(OpKind::log, {1.0f, static_cast<float>(M_E)});
  expect_all_near(l.data, {0.0f, 1.0f}, 1e-6);
}

TEST(ReferenceUnary, SinCosFloorCeilRoundSign) {
  const std::vector<float> x = {-2.5f, -1.5f, -0.5f, -0.0f, 0.5f, 1.5f, 2.5f, 2.7f, -2.7f, 3.0f};
  auto expect = [&](OpKind op, double (*f)(double)) {
    const Tensor y = unary(op, x);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y.data[i], f(x[i]), 1e-6) << i;
  };
  expect(OpKind::sin, [](double v) { return std::sin(v); });
  expect(OpKind::cos, [](double v) { return std::cos(v); });
  expect_all_near(unary(OpKind::floor, x).data, {-3, -2, -1, 0, 0, 1, 2, 2, -3, 3}, 0);
  expect_all_near(unary(OpKind::ceil, x).data, {-2, -1, 0, 0, 1, 2, 3, 3, -2, 3}, 0);
  // Halves to the even neighbour, as ONNX's Round and torch.round.
  expect_all_near(unary(OpKind::round, x).data, {-2, -2, 0, 0, 0, 2, 2, 3, -3, 3}, 0);
  expect_all_near(unary(OpKind::sign, x).data, {-1, -1, -1, 0, 1, 1, 1, 1, -1, 1}, 0);
  EXPECT_TRUE(std::isnan(unary(OpKind::sign, {std::nanf("")}).data[0]));
}

TEST(ReferenceUnary, TrigonometricAndHyperbolicInAndOutOfTheirDomains) {
  const std::vector<float> x = {-0.99f, -0.5f, -0.0f, 0.3f,
                                0.7f};  // inside every domain but acosh's
  auto expect = [&](OpKind op, double (*f)(double), const std::vector<float>& in) {
    const Tensor y = unary(op, in);
    for (size_t i = 0; i < in.size(); ++i) EXPECT_NEAR(y.data[i], f(in[i]), 1e-6) << i;
  };
  expect(
      OpKind::tan, [](double v) { return std::tan(v); }, x);
  expect(
      OpKind::asin, [](double v) { return std::asin(v); }, x);
  expect(
      OpKind::acos, [](double v) { return std::acos(v); }, x);
  expect(OpKind::atan, [](double v) { return std::atan(v); }, {-1e6f, -2.0f, 0.0f, 0.5f, 1e6f});
  expect(
      OpKind::sinh, [](double v) { return std::sinh(v); }, x);
  expect(
      OpKind::cosh, [](double v) { return std::cosh(v); }, x);
  expect(OpKind::asinh, [](double v) { return std::asinh(v); }, {-30.0f, -0.5f, 0.0f, 2.0f});
  expect(OpKind::acosh, [](double v) { return std::acosh(v); }, {1.0f, 1.5f, 10.0f});
  expect(
      OpKind::atanh, [](double v) { return std::atanh(v); }, x);
  // outside the domain: NaN, as the C library and ONNX Runtime give
  EXPECT_TRUE(std::isnan(unary(OpKind::asin, {1.5f}).data[0]));
  EXPECT_TRUE(std::isnan(unary(OpKind::acosh, {0.5f}).data[0]));
  EXPECT_TRUE(std::isinf(unary(OpKind::atanh, {1.0f}).data[0]));
}

// To i32: toward zero, saturated at the int32 range, NaN as 0; to f32 the values unchanged.
TEST(ReferenceCast, ToIntegerTruncatesTowardZeroAndSaturates) {
  const std::vector<float> x = {-2.7f,        -0.5f, -0.0f,
                                0.5f,         2.7f,  16777215.0f,
                                3e9f,         -3e9f, std::numeric_limits<float>::infinity(),
                                std::nanf("")};
  const Tensor i = unary(OpKind::cast, x, {{"dtype", std::string("i32")}});
  expect_all_near(i.data,
                  {-2, 0, 0, 0, 2, 16777215, 2147483647.0f, -2147483648.0f, 2147483647.0f, 0}, 0);
  const Tensor f = unary(OpKind::cast, {-2.7f, 3.0f}, {{"dtype", std::string("f32")}});
  expect_all_near(f.data, {-2.7f, 3.0f}, 0);
}

TEST(ReferenceUnary, ClipHardSigmoidHardSwishLeakyRelu) {
  const std::vector<float> x = {-4.0f, -1.0f, 0.5f, 3.0f, 7.0f};
  expect_all_near(unary(OpKind::clip, x, {{"min", 0.0}, {"max", 6.0}}).data, {0, 0, 0.5f, 3, 6}, 0);
  expect_all_near(unary(OpKind::clip, x, {{"max", 1.0}}).data, {-4, -1, 0.5f, 1, 1}, 0);
  // alpha 1/6, beta 1/2: PyTorch's hardsigmoid.
  expect_all_near(unary(OpKind::hard_sigmoid, x, {{"alpha", 1.0 / 6}, {"beta", 0.5}}).data,
                  {0, 1.0f / 3, 0.5f + 0.5f / 6, 1, 1}, 1e-6);
  expect_all_near(unary(OpKind::hard_swish, x).data, {0, -1.0f / 3, 0.5f * 3.5f / 6, 3, 7}, 1e-6);
  expect_all_near(unary(OpKind::leaky_relu, x, {{"alpha", 0.1}}).data, {-0.4f, -0.1f, 0.5f, 3, 7},
                  1e-6);
}

TEST(ReferenceUnary, ClipKeepsNan) {
  const Tensor y = unary(OpKind::clip, {std::nanf("")}, {{"min", 0.0}, {"max", 1.0}});
  EXPECT_TRUE(std::isnan(y.data[0]));
}

TEST(ReferenceUnary, ClipWithMinAboveMaxIsRejected) {
  Graph g;
  EXPECT_THROW(g.add_node(OpKind::clip, {g.add_input("x", {3})}, {{"min", 2.0}, {"max", 1.0}}),
               UserError);
}

TEST(ReferenceBinary, PowMaxMinBroadcast) {
  Graph g;
  const ValueId a = g.add_input("a", {2, 2});
  const ValueId b = g.add_input("b", {2});
  const Tensor ta({2, 2}, {1, 2, 3, 4}), tb({2}, {2, 3});
  Graph gp = g;
  expect_all_near(run_one(gp, gp.add_node(OpKind::pow, {a, b}), {ta, tb}).data, {1, 8, 9, 64}, 0);
  Graph gx = g;
  expect_all_near(run_one(gx, gx.add_node(OpKind::max, {a, b}), {ta, tb}).data, {2, 3, 3, 4}, 0);
  Graph gn = g;
  expect_all_near(run_one(gn, gn.add_node(OpKind::min, {a, b}), {ta, tb}).data, {1, 2, 2, 3}, 0);
}

TEST(ReferenceReduce, MeanSumMaxOverAxes) {
  const Tensor x = iota_tensor({2, 3, 4});
  auto run = [&](OpKind op, Ints axes, int64_t keep) {
    Graph g;
    return run_one(
        g, g.add_node(op, {g.add_input("x", x.shape)}, {{"axes", axes}, {"keepdims", keep}}), {x});
  };
  const Tensor mean_last = run(OpKind::reduce_mean, {-1}, 1);
  EXPECT_EQ(mean_last.shape, (Shape{2, 3, 1}));
  expect_all_near(mean_last.data, {1.5f, 5.5f, 9.5f, 13.5f, 17.5f, 21.5f}, 1e-6);
  const Tensor sum_outer = run(OpKind::reduce_sum, {0, 2}, 0);  // not adjacent
  EXPECT_EQ(sum_outer.shape, (Shape{3}));
  // axis 1 index j: sum over i, k of 12 i + 4 j + k = 2 * (6 + 16 j) + 12 * 4
  expect_all_near(sum_outer.data, {60, 92, 124}, 1e-5);
  const Tensor max_mid = run(OpKind::reduce_max, {1}, 0);
  EXPECT_EQ(max_mid.shape, (Shape{2, 4}));
  expect_all_near(max_mid.data, {8, 9, 10, 11, 20, 21, 22, 23}, 0);
  const Tensor all = run(OpKind::reduce_sum, {}, 0);
  EXPECT_EQ(all.shape, Shape{});
  expect_all_near(all.data, {276}, 0);
}

TEST(ReferenceReduce, RepeatedOrOutOfRangeAxisIsRejected) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 3});
  EXPECT_THROW(g.add_node(OpKind::reduce_mean, {x}, {{"axes", Ints{1, -1}}}), UserError);
  EXPECT_THROW(g.add_node(OpKind::reduce_mean, {x}, {{"axes", Ints{2}}}), UserError);
}

TEST(ReferencePad, ConstantReflectEdge) {
  const Tensor x({1, 3}, {1, 2, 3});
  auto run = [&](const std::string& mode, Ints pads) {
    Graph g;
    return run_one(g,
                   g.add_node(OpKind::pad, {g.add_input("x", x.shape)},
                              {{"pads", pads}, {"mode", mode}, {"value", -1.0}}),
                   {x});
  };
  const Tensor c = run("constant", {1, 2, 0, 1});
  EXPECT_EQ(c.shape, (Shape{2, 6}));
  expect_all_near(c.data, {-1, -1, -1, -1, -1, -1, -1, -1, 1, 2, 3, -1}, 0);
  expect_all_near(run("reflect", {0, 2, 0, 2}).data, {3, 2, 1, 2, 3, 2, 1}, 0);
  expect_all_near(run("edge", {0, 2, 0, 1}).data, {1, 1, 1, 2, 3, 3}, 0);
}

TEST(ReferencePad, ReflectWiderThanTheAxisIsRejected) {
  Graph g;
  EXPECT_THROW(g.add_node(OpKind::pad, {g.add_input("x", {1, 3})},
                          {{"pads", Ints{0, 3, 0, 0}}, {"mode", std::string("reflect")}}),
               UserError);
  EXPECT_THROW(g.add_node(OpKind::pad, {g.add_input("y", {1, 3})}, {{"pads", Ints{0, 1}}}),
               UserError);
}

TEST(ReferenceGather, AxisOneWithNegativeIndices) {
  Graph g;
  const ValueId data = g.add_input("d", {2, 3});
  const ValueId idx = g.add_input("i", {2, 2}, ir::DType::i32);
  const Tensor out = run_one(g, g.add_node(OpKind::gather, {data, idx}, {{"axis", int64_t{1}}}),
                             {iota_tensor({2, 3}), Tensor({2, 2}, {0, -1, 1, 1}, ir::DType::i32)});
  EXPECT_EQ(out.shape, (Shape{2, 2, 2}));
  expect_all_near(out.data, {0, 2, 1, 1, 3, 5, 4, 4}, 0);
}

TEST(ReferenceGather, OutOfRangeIndexIsAUserError) {
  Graph g;
  const ValueId data = g.add_input("d", {3});
  const ValueId idx = g.add_input("i", {1}, ir::DType::i32);
  g.mark_output(g.add_node(OpKind::gather, {data, idx}));
  EXPECT_THROW(interpret(g, {iota_tensor({3}), Tensor({1}, {3}, ir::DType::i32)}), UserError);
}

TEST(ReferenceGather, FloatIndicesAreRejected) {
  Graph g;
  EXPECT_THROW(g.add_node(OpKind::gather, {g.add_input("d", {3}), g.add_input("i", {1})}),
               UserError);
}

// scatter is gather's inverse: updates[k] lands at indices[k] along the axis, in index order.
TEST(ReferenceScatter, AxisOneWithNegativeAndRepeatedIndices) {
  const Tensor updates({2, 3}, {10, 20, 30, 40, 50, 60});
  const Tensor idx({3}, {-1, 0, 2}, ir::DType::i32);  // -1 and 2 both name column 2
  for (const auto& [reduction, want] : std::vector<std::pair<std::string, std::vector<float>>>{
           {"none", {20, 1, 30, 50, 4, 60}},
           {"add", {20, 1, 2 + 10 + 30, 53, 4, 5 + 40 + 60}},
           {"max", {20, 1, 30, 50, 4, 60}},
           {"min", {0, 1, 2, 3, 4, 5}},
           {"mul", {0, 1, 2 * 10 * 30, 150, 4, 5 * 40 * 60}}}) {
    Graph g;
    const ValueId data = g.add_input("d", {2, 3});
    const ValueId i = g.add_input("i", {3}, ir::DType::i32);
    const ValueId u = g.add_input("u", {2, 3});
    const Tensor out = run_one(
        g,
        g.add_node(OpKind::scatter, {data, i, u}, {{"axis", int64_t{1}}, {"reduction", reduction}}),
        {iota_tensor({2, 3}), idx, updates});
    EXPECT_EQ(out.shape, (Shape{2, 3}));
    expect_all_near(out.data, want, 0);
  }
}

// max and min keep a NaN from either side (numpy's maximum, PyTorch's amax).
TEST(ReferenceScatter, MaxAndMinPropagateNaNFromEitherSide) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* reduction : {"max", "min"}) {
    Graph g;
    const ValueId data = g.add_input("d", {3});
    const ValueId i = g.add_input("i", {2}, ir::DType::i32);
    const ValueId u = g.add_input("u", {2});
    const Tensor out = run_one(
        g,
        g.add_node(OpKind::scatter, {data, i, u},
                   {{"axis", int64_t{0}}, {"reduction", std::string(reduction)}}),
        {Tensor({3}, {nan, 1, 2}), Tensor({2}, {0, 1}, ir::DType::i32), Tensor({2}, {5, nan})});
    EXPECT_TRUE(std::isnan(out.data[0])) << reduction;
    EXPECT_TRUE(std::isnan(out.data[1])) << reduction;
    EXPECT_EQ(out.data[2], 2.0f) << reduction;
  }
}

TEST(ReferenceScatter, OutOfRangeIndexIsAUserErrorNamingTheNode) {
  Graph g;
  const ValueId y = g.add_node(
      OpKind::scatter,
      {g.add_input("d", {3}), g.add_input("i", {1}, ir::DType::i32), g.add_input("u", {1})}, {},
      "put");
  g.mark_output(y);
  try {
    interpret(g, {iota_tensor({3}), Tensor({1}, {-4}, ir::DType::i32), Tensor({1}, {1})});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'put' (scatter): index -4"), std::string::npos)
        << e.what();
  }
}

TEST(ReferenceScatter, UpdatesNotShapedAsTheGatherAreRejected) {
  Graph g;
  const ValueId d = g.add_input("d", {2, 3}), i = g.add_input("i", {2}, ir::DType::i32);
  EXPECT_THROW(
      g.add_node(OpKind::scatter, {d, i, g.add_input("u", {2, 3})}, {{"axis", int64_t{1}}}),
      UserError);
  EXPECT_THROW(g.add_node(OpKind::scatter, {d, g.add_input("f", {2}), g.add_input("v", {2, 2})},
                          {{"axis", int64_t{1}}}),
               UserError);  // float indices
  EXPECT_THROW(g.add_node(OpKind::scatter, {d, i, g.add_input("w", {2, 2})},
                          {{"axis", int64_t{1}}, {"reduction", std::string("mean")}}),
               UserError);
}

TEST(ReferenceWhere, BroadcastsAllThree) {
  Graph g;
  const ValueId c = g.add_input("c", {2, 1});
  const ValueId a = g.add_input("a", {1, 3});
  const ValueId b = g.add_input("b", {});
  const Tensor out = run_one(g, g.add_node(OpKind::where, {c, a, b}),
                             {Tensor({2, 1}, {1, 0}), Tensor({1, 3}, {1, 2, 3}), Tensor({}, {9})});
  EXPECT_EQ(out.shape, (Shape{2, 3}));
  expect_all_near(out.data, {1, 2, 3, 9, 9, 9}, 0);
}

TEST(ReferenceCompare, EveryModeBroadcastsToZerosAndOnes) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<const char*, std::vector<float>>> cases = {
      {"equal", {0, 1, 0, 0, 1, 0}},   {"not_equal", {1, 0, 1, 1, 0, 1}},
      {"less", {1, 0, 0, 0, 0, 0}},    {"less_equal", {1, 1, 0, 0, 1, 0}},
      {"greater", {0, 0, 1, 0, 0, 1}}, {"greater_equal", {0, 1, 1, 0, 1, 1}}};
  for (const auto& [mode, want] : cases) {
    Graph g;
    const ValueId a = g.add_input("a", {2, 3});
    const ValueId b = g.add_input("b", {3});
    const Tensor out =
        run_one(g, g.add_node(OpKind::compare, {a, b}, {{"mode", std::string(mode)}}),
                {Tensor({2, 3}, {1, 2, 3, nan, 2, 5}), Tensor({3}, {2, 2, 2})});
    EXPECT_EQ(out.shape, (Shape{2, 3}));
    expect_all_near(out.data, want, 0);
  }
}

TEST(ReferenceCompare, AnUnknownModeIsRejectedNamingTheNode) {
  Graph g;
  const ValueId a = g.add_input("a", {3});
  try {
    g.add_node(OpKind::compare, {a, a}, {{"mode", std::string("equals")}}, "cmp");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'cmp' (compare): mode 'equals'"), std::string::npos)
        << e.what();
  }
}

TEST(ReferenceCumsum, InclusiveExclusiveAndReverseAlongAnAxis) {
  const std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<float>>> cases = {
      {{0, 0}, {1, 3, 6, 10, 20, 30}},
      {{1, 0}, {0, 1, 3, 0, 10, 20}},
      {{0, 1}, {6, 5, 3, 30, 20, 10}},
      {{1, 1}, {5, 3, 0, 20, 10, 0}}};
  for (const auto& [flags, want] : cases) {
    Graph g;
    const ValueId x = g.add_input("x", {2, 3});
    const Tensor out = run_one(
        g,
        g.add_node(OpKind::cumsum, {x},
                   {{"axis", int64_t{-1}}, {"exclusive", flags.first}, {"reverse", flags.second}}),
        {Tensor({2, 3}, {1, 2, 3, 10, 10, 10})});
    expect_all_near(out.data, want, 0);
  }
}

TEST(ReferenceCumsum, IntegerInputsStayIntegers) {
  Graph g;
  const ValueId x = g.add_input("x", {4}, ir::DType::i32);
  const ValueId sum = g.add_node(OpKind::cumsum, {x}, {{"axis", int64_t{0}}});
  EXPECT_EQ(g.value(sum).dtype, ir::DType::i32);
  EXPECT_EQ(g.value(g.add_node(OpKind::mul, {sum, x})).dtype, ir::DType::i32);
  EXPECT_EQ(g.value(g.add_node(OpKind::mul, {sum, g.add_input("f", {4})})).dtype, ir::DType::f32);
  EXPECT_EQ(g.value(g.add_node(OpKind::compare, {sum, x}, {{"mode", std::string("less")}})).dtype,
            ir::DType::i32);
}

TEST(ReferenceExpand, BroadcastsToTheTargetShape) {
  Graph g;
  const Tensor out =
      run_one(g, g.add_node(OpKind::expand, {g.add_input("x", {3, 1})}, {{"shape", Ints{2, 1, 2}}}),
              {Tensor({3, 1}, {1, 2, 3})});
  EXPECT_EQ(out.shape, (Shape{2, 3, 2}));
  expect_all_near(out.data, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}, 0);
}

TEST(ReferenceAvgPool, ExcludedPaddingDividesByTheTapsInside) {
  Graph g;
  const Tensor x({1, 1, 2, 2}, {1, 2, 3, 4});
  const Attrs a{{"kernel", Ints{2, 2}},
                {"stride", Ints{1, 1}},
                {"pad", Ints{1, 1}},
                {"count_include_pad", int64_t{0}}};
  const Tensor out =
      run_one(g, g.add_node(OpKind::avg_pool2d, {g.add_input("x", x.shape)}, a), {x});
  EXPECT_EQ(out.shape, (Shape{1, 1, 3, 3}));
  expect_all_near(out.data, {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4}, 1e-6);
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
