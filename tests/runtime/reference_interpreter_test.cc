#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "passes/ir/graph.h"
#include "tests/runtime/reference_test_util.h"

namespace cuvil::runtime::reference::testing {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;

Graph two_input_graph() {
  Graph g;
  ValueId a = g.add_input("a", {2, 3});
  ValueId b = g.add_input("bias", {3});
  g.mark_output(g.add_node(OpKind::add, {a, b}));
  return g;
}

TEST(ReferenceInterpreter, WrongInputCountIsAUserError) {
  Graph g = two_input_graph();
  EXPECT_THROW(interpret(g, {random_tensor({2, 3}, 1)}), UserError);
}

TEST(ReferenceInterpreter, WrongInputShapeNamesTheInput) {
  Graph g = two_input_graph();
  try {
    interpret(g, {random_tensor({2, 3}, 1), random_tensor({4}, 2)});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'bias'"), std::string::npos) << e.what();
  }
}

TEST(ReferenceInterpreter, InputWithTooFewValuesIsAUserError) {
  Graph g = two_input_graph();
  Tensor short_bias;
  short_bias.shape = {3};
  short_bias.data = {1, 2};
  EXPECT_THROW(interpret(g, {random_tensor({2, 3}, 1), short_bias}), UserError);
}

TEST(ReferenceInterpreter, OutputsComeInGraphOrderIncludingInputsAndConstants) {
  Graph g;
  ValueId x = g.add_input("x", {3});
  ValueId c = constant(g, "c", Tensor({3}, {1, 2, 3}));
  ValueId y = g.add_node(OpKind::mul, {x, c});
  g.mark_output(y);
  g.mark_output(c);
  g.mark_output(x);
  const std::vector<Tensor> out = interpret(g, {Tensor({3}, {2, 2, 2})});
  ASSERT_EQ(out.size(), 3u);
  expect_all_near(out[0].data, {2, 4, 6}, 0);
  expect_all_near(out[1].data, {1, 2, 3}, 0);
  expect_all_near(out[2].data, {2, 2, 2}, 0);
}

TEST(ReferenceInterpreter, ValuesReadTwiceSurviveUntilTheirLastUse) {
  // t is read by two later nodes and also used twice by one node: freeing must wait for all.
  Graph g;
  ValueId x = g.add_input("x", {4});
  ValueId t = g.add_node(OpKind::relu, {x});
  ValueId sq = g.add_node(OpKind::mul, {t, t});
  ValueId s = g.add_node(OpKind::sigmoid, {x});
  ValueId y = g.add_node(OpKind::add, {sq, t});
  ValueId z = g.add_node(OpKind::sub, {y, s});
  g.mark_output(z);
  g.mark_output(t);
  const std::vector<Tensor> out = interpret(g, {Tensor({4}, {-1, 0, 1, 2})});
  ASSERT_EQ(out.size(), 2u);
  const auto sig = [](double v) { return static_cast<float>(1 / (1 + std::exp(-v))); };
  expect_all_near(out[0].data, {-sig(-1), -sig(0), 2 - sig(1), 6 - sig(2)}, 1e-6);
  expect_all_near(out[1].data, {0, 0, 1, 2}, 0);
}

TEST(ReferenceInterpreter, LazyConstantsAreMaterialisedFromTheirInit) {
  Graph g;
  ValueId x = g.add_input("x", {2, 3});
  ValueId w = g.add_constant("w", {3}, ir::ConstantInit::fill(0.5f));
  g.mark_output(g.add_node(OpKind::mul, {x, w}));
  const std::vector<Tensor> out = interpret(g, {Tensor({2, 3}, {2, 4, 6, 8, 10, 12})});
  expect_all_near(out[0].data, {1, 2, 3, 4, 5, 6}, 0);
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
