// verify's check of a compiled pipeline against the reference interpreter: the bound, and the
// conditioning rule for models that round computed values.
#include "bench_suite/verify.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "passes/cuvilpass.h"
#include "passes/ir/graph.h"
#include "passes/pipeline.h"

namespace cuvil::bench {
namespace {

using ir::OpKind;

TEST(CoveredBySpread, AnErrorWithinAFewSpreadsOfAnIllConditionedReferenceIsCovered) {
  EXPECT_TRUE(covered_by_spread(8e-2, 8e-2, 1e-4));
  EXPECT_TRUE(covered_by_spread(3e-1, 8e-2, 1e-4));
}

TEST(CoveredBySpread, AWellConditionedReferenceCoversNothing) {
  EXPECT_FALSE(covered_by_spread(8e-2, 1e-5, 1e-4));  // the spread is inside the bound
  EXPECT_FALSE(covered_by_spread(2e-4, 9e-5, 1e-4));
}

TEST(CoveredBySpread, AnErrorFarPastTheSpreadIsAFailure) {
  EXPECT_FALSE(covered_by_spread(1.0, 8e-2, 1e-4));
}

// y = round(x W * 500) / 500: a matmul's fp32 sum against the interpreter's fp64 one lands on
// the other side of a rounding boundary for about one output in 500, a step of 2e-3 (4e-4 of the
// largest output), past fp32's 1e-4.
ir::Graph rounding_graph() {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", {64, 96});
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  std::vector<float> w(512 * 96);
  for (float& v : w) v = normal(rng);
  const ir::ValueId weight = g.add_constant_data("w", ir::Tensor({512, 96}, w), true);
  const ir::ValueId y = g.add_node(OpKind::linear, {x, weight}, {}, "fc");
  const ir::ValueId scale = g.add_constant_data("scale", ir::Tensor({}, {500.0f}), false);
  const ir::ValueId up = g.add_node(OpKind::mul, {y, scale}, {}, "up");
  const ir::ValueId rounded = g.add_node(OpKind::round, {up}, {}, "round");
  g.mark_output(g.add_node(OpKind::div, {rounded, scale}, {}, "down"));
  return g;
}

TEST(VerifyGraph, ARoundingModelIsIllConditionedAndPassesWithinItsSpread) {
  const ir::Graph graph = rounding_graph();
  const VerifyResult r =
      verify_graph(graph, passes::default_pipeline("cpu"), 2, /*seed=*/3, "config");
  ASSERT_EQ(r.outputs.size(), 1u);
  const OutputCheck& out = r.outputs[0];
  EXPECT_GT(out.max_relative_error, r.tolerance);  // flips happened: the bound alone fails it
  EXPECT_GT(out.reference_spread, r.tolerance);
  EXPECT_TRUE(out.ill_conditioned);
  EXPECT_TRUE(r.ok());
}

TEST(VerifyGraph, AContinuousModelNeverNeedsTheSpread) {
  // The rounding model's matmul alone: within the bound, no spread computed.
  ir::Graph plain;
  const ir::ValueId x = plain.add_input("x", {64, 96});
  std::vector<float> w(512 * 96, 0.01f);
  const ir::ValueId weight = plain.add_constant_data("w", ir::Tensor({512, 96}, w), true);
  plain.mark_output(plain.add_node(OpKind::linear, {x, weight}, {}, "fc"));
  const VerifyResult r = verify_graph(plain, passes::default_pipeline("cpu"), 2, 3, "config");
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_TRUE(r.outputs[0].ok);
  EXPECT_FALSE(r.outputs[0].ill_conditioned);
  EXPECT_EQ(r.outputs[0].reference_spread, 0.0);
}

}  // namespace
}  // namespace cuvil::bench
