#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/ir/graph.h"
#include "passes/ir/verifier.h"

namespace cuvil::ir {
namespace {

Graph small_graph() {
  Graph g;
  ValueId x = g.add_input("x", {3, 5});
  ValueId w = g.add_constant("w", {7, 5}, ConstantInit::normal(0, 1, 3));
  ValueId h = g.add_node(OpKind::linear, {x, w}, {}, "fc");
  ValueId y = g.add_node(OpKind::relu, {h}, {}, "act");
  g.mark_output(y);
  return g;
}

TEST(Verifier, AcceptsWellFormedGraph) {
  EXPECT_NO_THROW(verify(small_graph()));
}

TEST(Verifier, RejectsGraphWithoutOutputs) {
  Graph g;
  g.add_input("x", {3});
  EXPECT_THROW(verify(g), UserError);
}

TEST(Verifier, RejectsUseBeforeDefinition) {
  Graph g = small_graph();
  std::swap(g.mutable_nodes()[0], g.mutable_nodes()[1]);
  EXPECT_THROW(verify(g), UserError);
}

TEST(Verifier, RejectsStaleShape) {
  Graph g = small_graph();
  g.mutable_value(g.outputs()[0]).shape = {3, 8};
  EXPECT_THROW(verify(g), UserError);
}

TEST(Verifier, RejectsConstantWithWrongDataSize) {
  Graph g = small_graph();
  ValueId w = g.constants()[0];
  g.mutable_value(w).data = std::make_shared<const std::vector<float>>(3, 0.0f);
  EXPECT_THROW(verify(g), UserError);
}

TEST(Verifier, RejectsDoubleAssignment) {
  Graph g = small_graph();
  g.mutable_nodes()[1].output = g.mutable_nodes()[0].output;
  EXPECT_THROW(verify(g), UserError);
}

TEST(Graph, RecomputeRestoresTopologicalOrderAndDropsDeadNodes) {
  Graph g = small_graph();
  ValueId x = g.inputs()[0];
  g.add_node(OpKind::sigmoid, {x}, {}, "unused");
  std::swap(g.mutable_nodes()[0], g.mutable_nodes()[1]);
  g.recompute();
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].name, "fc");
  EXPECT_EQ(g.nodes()[1].name, "act");
  EXPECT_NO_THROW(verify(g));
}

TEST(Graph, ReplaceAllUsesRewiresOutputs) {
  Graph g = small_graph();
  ValueId h = g.nodes()[0].output;
  g.replace_all_uses(g.outputs()[0], h);
  g.recompute();
  EXPECT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.outputs()[0], h);
}

TEST(Graph, ParameterCountSkipsNonTrainableConstants) {
  Graph g = small_graph();
  g.add_constant("running_mean", {100}, ConstantInit::fill(0), /*trainable=*/false);
  EXPECT_EQ(g.parameter_count(), 35);
}

TEST(Graph, ConstantsMaterialiseLazilyAndShareBetweenCopies) {
  Graph g = small_graph();
  ValueId w = g.constants()[0];
  EXPECT_EQ(g.value(w).data, nullptr);
  const float first = g.constant_data(w)[0];
  Graph copy = g;
  EXPECT_EQ(copy.value(w).data.get(), g.value(w).data.get());
  EXPECT_EQ(copy.constant_data(w)[0], first);
}

}  // namespace
}  // namespace cuvil::ir
