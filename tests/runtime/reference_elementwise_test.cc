#include <gtest/gtest.h>

#include <cmath>

#include "passes/ir/graph.h"
#include "tests/runtime/reference_test_util.h"

namespace cuvil::runtime::reference::testing {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;

TEST(ReferenceElementwise, ChannelVectorBroadcastsOverNchw) {
  Graph g;
  const Tensor x = random_tensor({2, 3, 5, 7}, 1);
  ValueId xi = g.add_input("x", x.shape);
  ValueId c = constant(g, "c", Tensor({3, 1, 1}, {1, 10, 100}));
  ValueId y = g.add_node(OpKind::add, {xi, c});
  const Tensor out = run_one(g, y, {x});
  ASSERT_EQ(out.shape, x.shape);
  for (size_t i = 0; i < x.data.size(); ++i) {
    const float offset = std::vector<float>{1, 10, 100}[(i / 35) % 3];
    EXPECT_EQ(out.data[i], x.data[i] + offset) << i;
  }
}

TEST(ReferenceElementwise, BothOperandsBroadcastToAnOuterProduct) {
  Graph g;
  ValueId a = g.add_input("a", {3, 1});
  ValueId b = g.add_input("b", {1, 4});
  ValueId y = g.add_node(OpKind::mul, {a, b});
  const Tensor out = run_one(g, y, {Tensor({3, 1}, {1, 2, 3}), Tensor({1, 4}, {1, 10, 100, 1000})});
  expect_all_near(out.data, {1, 10, 100, 1000, 2, 20, 200, 2000, 3, 30, 300, 3000}, 0);
}

TEST(ReferenceElementwise, SubAndDivKeepOperandOrder) {
  Graph g;
  ValueId a = g.add_input("a", {2});
  ValueId b = g.add_input("b", {1});
  ValueId d = g.add_node(OpKind::div, {a, b});
  ValueId s = g.add_node(OpKind::sub, {b, d});  // scalar-like left operand
  const Tensor out = run_one(g, s, {Tensor({2}, {8, 2}), Tensor({1}, {4})});
  expect_all_near(out.data, {4 - 2, 4 - 0.5f}, 0);
}

TEST(ReferenceElementwise, UnaryActivationsMatchTheirFormulas) {
  const std::vector<float> x = {-2.0f, -0.5f, 0.0f, 1.0f, 3.0f};
  for (OpKind op : {OpKind::relu, OpKind::silu, OpKind::gelu, OpKind::sigmoid}) {
    Graph g;
    ValueId y = g.add_node(op, {g.add_input("x", {5})});
    const Tensor out = run_one(g, y, {Tensor({5}, x)});
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      double want = 0;
      if (op == OpKind::relu) want = v > 0 ? v : 0;
      if (op == OpKind::sigmoid) want = 1 / (1 + std::exp(-v));
      if (op == OpKind::silu) want = v / (1 + std::exp(-v));
      if (op == OpKind::gelu) want = v * 0.5 * std::erfc(-v / std::sqrt(2.0));
      EXPECT_NEAR(out.data[i], want, 1e-6) << ir::to_string(op) << " at " << v;
    }
  }
}

TEST(ReferenceElementwise, GeluOfOneIsPhiOfOne) {
  Graph g;
  ValueId y = g.add_node(OpKind::gelu, {g.add_input("x", {1})});
  const Tensor out = run_one(g, y, {Tensor({1}, {1.0f})});
  EXPECT_NEAR(out.data[0], 0.8413447460685429, 1e-6);  // the erf GELU, not the tanh one
}

TEST(ReferenceEpilogue, AddThenReluEqualsSeparateOps) {
  const Tensor x = random_tensor({3, 5}, 2);
  const Tensor w = random_tensor({7, 5}, 3);
  const Tensor b = random_tensor({7}, 4);
  const Tensor r = random_tensor({3, 7}, 5);

  Graph separate;
  ValueId lin = separate.add_node(
      OpKind::linear,
      {separate.add_input("x", x.shape), constant(separate, "w", w), constant(separate, "b", b)});
  ValueId sum = separate.add_node(OpKind::add, {lin, separate.add_input("r", r.shape)});
  const Tensor want = run_one(separate, separate.add_node(OpKind::relu, {sum}), {x, r});

  Graph fused;
  ValueId xi = fused.add_input("x", x.shape);
  ValueId ri = fused.add_input("r", r.shape);
  ValueId y =
      fused.add_node(OpKind::linear, {xi, constant(fused, "w", w), constant(fused, "b", b)});
  ir::Node& node = fused.mutable_nodes()[0];
  node.inputs.push_back(ri);  // the residual follows the op's own inputs (bias stays a bias)
  node.epilogue = {{OpKind::add, 3}, {OpKind::relu, -1}};
  const Tensor got = run_one(fused, y, {x, r});
  expect_all_near(got.data, want.data, 0);
}

TEST(ReferenceEpilogue, RunningResultIsTheLeftOperandAndOperandsBroadcast) {
  Graph g;
  ValueId x = g.add_input("x", {2, 3});
  ValueId c = constant(g, "c", Tensor({3}, {1, 2, 4}));
  ValueId y = g.add_node(OpKind::relu, {x});
  ir::Node& node = g.mutable_nodes()[0];
  node.inputs.push_back(c);
  node.inputs.push_back(c);
  node.epilogue = {{OpKind::sub, 1}, {OpKind::div, 2}};  // (relu(x) - c) / c
  const Tensor out = run_one(g, y, {Tensor({2, 3}, {-1, 4, 8, 3, 2, 0})});
  expect_all_near(out.data, {-1, 1, 1, 2, 0, -1}, 0);
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
