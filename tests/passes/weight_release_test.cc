// Weights a prepared kernel replaced (packed, Winograd-transformed) are released at lowering: the
// plan and the compiled graph no longer hold the originals, the plan's weight bytes are the
// prepared forms only, the executor binds nothing to them, and the outputs still match the
// reference interpreter.
#include <gtest/gtest.h>

#include <string>

#include "passes/ir/graph.h"
#include "passes/lower.h"
#include "runtime/executor.h"
#include "runtime/kernel_table.h"
#include "runtime/reference/interpreter.h"
#include "test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using runtime::PlanTensor;
using Ints = std::vector<int64_t>;

struct Weights {
  ValueId winograd_w, direct_w, linear_w, bias;
};

// x (NHWC) -> conv 3x3 Winograd (+bias) -> conv 3x3 direct (packed) -> linear (packed GEMM).
Graph prepared_graph(Weights* w) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 10, 10, 8});
  w->winograd_w = testing::random_constant(g, "w_winograd", {16, 8, 3, 3}, 1);
  w->bias = testing::random_constant(g, "b_winograd", {16}, 2);
  w->direct_w = testing::random_constant(g, "w_direct", {16, 16, 3, 3}, 3, 0.2f);
  w->linear_w = testing::random_constant(g, "w_linear", {24, 16}, 4);
  ir::Attrs conv{{"pad", Ints{1, 1}}, {"layout", std::string("nhwc")}};
  conv.set("impl", std::string("conv2d.winograd_nhwc"));
  const ValueId c1 = g.add_node(OpKind::conv2d, {x, w->winograd_w, w->bias}, conv, "winograd");
  conv.set("impl", std::string("conv2d.direct_nhwc"));
  const ValueId c2 = g.add_node(OpKind::conv2d, {c1, w->direct_w}, conv, "direct");
  ir::Attrs lin{{"impl", std::string("linear.gemm")}, {"gemm.prepack", int64_t{1}}};
  g.mark_output(g.add_node(OpKind::linear, {c2, w->linear_w}, lin, "linear"));
  return g;
}

const PlanTensor& constant_tensor(const runtime::Plan& plan, const std::string& name) {
  for (const PlanTensor& t : plan.tensors) {
    if (t.name == name && t.storage == PlanTensor::Storage::constant) return t;
  }
  ADD_FAILURE() << "no constant " << name;
  return plan.tensors.front();
}

double worst_error(const std::vector<ir::Tensor>& got, const std::vector<ir::Tensor>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, ir::max_relative_error(got[i], want[i]));
  }
  return worst;
}

TEST(WeightRelease, PreparedPlanHoldsNoOriginalItReplaced) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator is invisible to the heap counter prepared_bytes "
                  "reads (scripts/sanitize.sh)";
#endif
  Weights w;
  const Graph original = prepared_graph(&w);
  const auto inputs = ir::random_inputs(original, 5);
  const auto want = runtime::reference::interpret(original, inputs);

  Graph lowered = original;
  runtime::Plan plan = lower_releasing(lowered, {.threads = 2});

  ASSERT_EQ(plan.steps.size(), 3u);
  int64_t prepared = 0;
  for (const runtime::Step& s : plan.steps) {
    ASSERT_TRUE(s.prepared) << s.kernel;
    EXPECT_TRUE(runtime::replaces_input(s, 1)) << s.kernel;
    EXPECT_FALSE(runtime::replaces_input(s, 0)) << s.kernel;
    // The prepared forms are at least as large as what they replace (all fp32, padded).
    EXPECT_GE(s.prepared_bytes, ir::num_elements(s.input_shapes[1]) * 4) << s.kernel;
    prepared += s.prepared_bytes;
  }
  for (const char* name : {"w_winograd", "w_direct", "w_linear"}) {
    const PlanTensor& t = constant_tensor(plan, name);
    EXPECT_EQ(plan.constants[static_cast<size_t>(t.index)], nullptr) << name;
  }
  for (ValueId id : {w.winograd_w, w.direct_w, w.linear_w}) {
    EXPECT_EQ(lowered.value(id).data, nullptr) << lowered.value(id).name;
  }
  // The bias is still read at run time: kept, by the plan and the graph.
  const PlanTensor& bias = constant_tensor(plan, "b_winograd");
  ASSERT_NE(plan.constants[static_cast<size_t>(bias.index)], nullptr);
  EXPECT_NE(lowered.value(w.bias).data, nullptr);
  EXPECT_EQ(plan.weight_bytes(), prepared + 16 * 4);

  runtime::Executor executor(std::move(plan));
  EXPECT_LE(worst_error(executor.run(inputs), want), 1e-4);
  // Released weights made from an initialiser are made again, the same, when read.
  EXPECT_EQ(lowered.constant_data(w.direct_w), original.constant_data(w.direct_w));
}

TEST(WeightRelease, ConstLowerReleasesFromThePlanOnly) {
  Weights w;
  const Graph g = prepared_graph(&w);
  const runtime::Plan plan = lower(g, {});
  const PlanTensor& t = constant_tensor(plan, "w_linear");
  EXPECT_EQ(plan.constants[static_cast<size_t>(t.index)], nullptr);
  EXPECT_NE(g.value(w.linear_w).data, nullptr);
}

TEST(WeightRelease, AWeightAnyReaderStillReadsIsKept) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 6, 6, 4});
  const ValueId wt = testing::random_constant(g, "w", {4, 4, 3, 3}, 1);
  ir::Attrs conv{{"pad", Ints{1, 1}}, {"layout", std::string("nhwc")}};
  conv.set("impl", std::string("conv2d.winograd_nhwc"));
  const ValueId a = g.add_node(OpKind::conv2d, {x, wt}, conv, "winograd");
  conv.set("impl", std::string("conv2d.im2col"));  // reads its weights at run time
  const ValueId b = g.add_node(OpKind::conv2d, {a, wt}, conv, "im2col");
  g.mark_output(b);
  const ValueId out_w = testing::random_constant(g, "w_out", {4, 4, 3, 3}, 2);
  conv.set("impl", std::string("conv2d.direct_nhwc"));
  g.mark_output(g.add_node(OpKind::conv2d, {b, out_w}, conv, "direct"));
  g.mark_output(out_w);  // an output keeps its constant
  const auto inputs = ir::random_inputs(g, 3);
  const auto want = runtime::reference::interpret(g, inputs);
  Graph lowered = g;
  runtime::Plan plan = lower_releasing(lowered, {});
  for (const auto& c : plan.constants) EXPECT_NE(c, nullptr);
  runtime::Executor executor(std::move(plan));
  EXPECT_LE(worst_error(executor.run(inputs), want), 1e-4);
}

TEST(WeightRelease, ConstantsNoStepReadsAreReleasedFromTheCompiledGraph) {
  Weights w;
  Graph g = prepared_graph(&w);
  const ValueId dead = testing::random_constant(g, "dead", {64, 64}, 9);
  g.constant_data(dead);
  const runtime::Plan plan = lower_releasing(g, {});
  EXPECT_EQ(g.value(dead).data, nullptr);
  EXPECT_FALSE(g.value(dead).released);  // made from its initialiser: made again on demand
}

TEST(WeightReleaseDeathTest, ReleasedDataWithoutAnInitialiserCannotBeRead) {
  Graph g;
  const ValueId c = g.add_constant_data("folded", ir::Tensor({3}, {1.0f, 2.0f, 3.0f}));
  g.release_constant_data(c);
  EXPECT_DEATH(g.constant_data(c), "released");
}

TEST(WeightReleaseDeathTest, ExecutorRefusesAReleasedWeightAStepReads) {
  Weights w;
  const Graph g = prepared_graph(&w);
  runtime::Plan plan = lower(g, {});
  // Unprepared, the linear step would read its weights: the executor must refuse the plan.
  for (runtime::Step& s : plan.steps) {
    if (s.op == OpKind::linear) s.prepared.reset();
  }
  EXPECT_DEATH(runtime::Executor(std::move(plan)), "released");
}

}  // namespace
}  // namespace cuvil::passes
