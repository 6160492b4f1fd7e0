#include <gtest/gtest.h>

#include "passes/ir/graph.h"
#include "passes/registry.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using testing::run_pass;

struct Placed {
  ValueId value;
  int64_t first, last, begin, end;
};

// A reshape without an epilogue may share its input's region: whether a and b are such a chain.
bool reshape_chain(const Graph& g, ValueId a, ValueId b) {
  auto root = [&](ValueId v) {
    for (;;) {
      const ir::NodeId p = g.value(v).producer;
      if (p < 0) return v;
      const ir::Node& n = g.node(p);
      if (n.op != OpKind::reshape || !n.epilogue.empty() || g.value(n.inputs[0]).producer < 0)
        return v;
      v = n.inputs[0];
    }
  };
  return root(a) == root(b);
}

// An independent statement of the rule: a node result lives from the node that computes it to
// the last node reading it (inclusive; graph outputs to the end), and two results live at the
// same time must not share a byte, unless one is a reshape of the other (through reshapes).
std::vector<Placed> placements(const Graph& g) {
  const auto& nodes = g.nodes();
  std::vector<Placed> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ValueId v = nodes[i].output;
    Placed p{v, static_cast<int64_t>(i), static_cast<int64_t>(i), g.value(v).arena_offset, 0};
    for (size_t j = i + 1; j < nodes.size(); ++j) {
      for (ValueId in : nodes[j].inputs) {
        if (in == v) p.last = static_cast<int64_t>(j);
      }
    }
    for (ValueId o : g.outputs()) {
      if (o == v) p.last = static_cast<int64_t>(nodes.size());
    }
    p.end = p.begin + ir::kStorageBytesPerElement * ir::num_elements(g.value(v).shape);
    out.push_back(p);
  }
  return out;
}

void expect_valid_plan(const Graph& g, int64_t alignment) {
  const std::vector<Placed> placed = placements(g);
  for (const Placed& p : placed) {
    ASSERT_GE(p.begin, 0) << g.value(p.value).name << " has no arena offset";
    EXPECT_EQ(p.begin % alignment, 0) << g.value(p.value).name;
    EXPECT_LE(p.end, g.annotations.at("memory.peak_bytes"));
  }
  for (size_t a = 0; a < placed.size(); ++a) {
    for (size_t b = a + 1; b < placed.size(); ++b) {
      const Placed& x = placed[a];
      const Placed& y = placed[b];
      const bool together = x.first <= y.last && y.first <= x.last;
      const bool share = x.begin < y.end && y.begin < x.end;
      if (together && reshape_chain(g, x.value, y.value)) {
        EXPECT_EQ(x.begin, y.begin) << g.value(x.value).name << " and " << g.value(y.value).name;
        continue;
      }
      EXPECT_FALSE(together && share) << g.value(x.value).name << " and " << g.value(y.value).name
                                      << " are live together and overlap";
    }
  }
}

Graph optimised(Graph g, bool fuse) {
  run_pass(g, "fold-batchnorm");
  run_pass(g, "layout");
  if (fuse) run_pass(g, "fuse-elementwise");
  return g;
}

std::vector<Graph> sample_graphs() {
  return {testing::tiny_resnet(2, 7, 9), optimised(testing::tiny_resnet(1, 3, 5), true),
          testing::tiny_decoder(1, 5, 24), optimised(testing::tiny_unet_block(2, 7, 5), false),
          optimised(testing::tiny_unet_block(1, 3, 1), true)};
}

class MemoryPlanStrategies : public ::testing::TestWithParam<std::string> {};

TEST_P(MemoryPlanStrategies, NoLiveValuesOverlap) {
  for (int64_t alignment : {16, 64, 128, 4096}) {
    for (Graph& g : sample_graphs()) {
      SCOPED_TRACE("alignment " + std::to_string(alignment));
      run_pass(g, "memory-plan", {{"strategy", GetParam()}, {"alignment", alignment}});
      expect_valid_plan(g, alignment);
    }
  }
}

TEST_P(MemoryPlanStrategies, PeakIsAtMostNaive) {
  for (Graph& g : sample_graphs()) {
    run_pass(g, "memory-plan", {{"strategy", GetParam()}});
    EXPECT_LE(g.annotations.at("memory.peak_bytes"), g.annotations.at("memory.naive_bytes"));
    EXPECT_GT(g.annotations.at("memory.peak_bytes"), 0);
  }
}

TEST_P(MemoryPlanStrategies, InputsAndConstantsStayOutOfTheArena) {
  Graph g = testing::tiny_resnet(1, 3, 5);
  run_pass(g, "memory-plan", {{"strategy", GetParam()}});
  for (ValueId v : g.inputs()) EXPECT_EQ(g.value(v).arena_offset, -1);
  for (ValueId v : g.constants()) EXPECT_EQ(g.value(v).arena_offset, -1);
}

INSTANTIATE_TEST_SUITE_P(Strategies, MemoryPlanStrategies,
                         ::testing::Values("greedy-by-size", "first-fit", "none"));

TEST(MemoryPlan, NoneGivesEveryValueItsOwnRegion) {
  for (Graph& g : sample_graphs()) {
    run_pass(g, "memory-plan", {{"strategy", std::string("none")}});
    EXPECT_EQ(g.annotations.at("memory.peak_bytes"), g.annotations.at("memory.naive_bytes"));
  }
}

TEST(MemoryPlan, NaiveIsTheSumOfAlignedSizes) {
  Graph g = testing::tiny_decoder(1, 5, 24);
  run_pass(g, "memory-plan", {{"alignment", int64_t{64}}});
  int64_t sum = 0;
  for (const ir::Node& n : g.nodes()) {
    if (reshape_chain(g, n.output, n.inputs[0])) continue;  // shares its input's region
    const int64_t bytes = 4 * ir::num_elements(g.value(n.output).shape);
    sum += (bytes + 63) / 64 * 64;
  }
  EXPECT_EQ(g.annotations.at("memory.naive_bytes"), sum);
}

TEST(MemoryPlan, ChainReusesMemory) {
  // relu chain of 9 equal tensors: only two need to exist at once.
  Graph g;
  ValueId v = g.add_input("x", {3, 17});
  for (int i = 0; i < 9; ++i) v = g.add_node(OpKind::relu, {v});
  g.mark_output(v);
  for (const char* strategy : {"greedy-by-size", "first-fit"}) {
    run_pass(g, "memory-plan", {{"strategy", std::string(strategy)}, {"alignment", int64_t{64}}});
    const int64_t one = (3 * 17 * 4 + 63) / 64 * 64;
    EXPECT_EQ(g.annotations.at("memory.peak_bytes"), 2 * one) << strategy;
    expect_valid_plan(g, 64);
  }
}

TEST(MemoryPlan, OutputNeverSharesWithItsInput) {
  Graph g;
  const ValueId x = g.add_input("x", {7});
  const ValueId a = g.add_node(OpKind::relu, {x});
  const ValueId b = g.add_node(OpKind::silu, {a});
  g.mark_output(g.add_node(OpKind::gelu, {b}));
  run_pass(g, "memory-plan");
  EXPECT_NE(g.value(a).arena_offset, g.value(b).arena_offset);
  EXPECT_NE(g.value(b).arena_offset, g.value(g.outputs()[0]).arena_offset);
}

// A reshape moves no data: its result takes its input's region, which then lives until the last
// reader of either; a reshape of a graph input (outside the arena) or one with a fused epilogue
// (which writes) keeps its own.
TEST(MemoryPlan, ReshapeSharesItsInputsRegion) {
  Graph g;
  const ValueId x = g.add_input("x", {4, 6});
  const ValueId of_input = g.add_node(OpKind::reshape, {x}, {{"shape", std::vector<int64_t>{24}}});
  const ValueId a = g.add_node(OpKind::relu, {x});
  const ValueId r1 = g.add_node(OpKind::reshape, {a}, {{"shape", std::vector<int64_t>{2, 12}}});
  const ValueId r2 = g.add_node(OpKind::reshape, {r1}, {{"shape", std::vector<int64_t>{24}}});
  const ValueId b = g.add_node(OpKind::silu, {r2});
  const ValueId c = g.add_node(
      OpKind::add, {a, g.add_node(OpKind::reshape, {b}, {{"shape", std::vector<int64_t>{4, 6}}})});
  g.mark_output(c);
  g.mark_output(of_input);
  for (const char* strategy : {"greedy-by-size", "first-fit", "none"}) {
    run_pass(g, "memory-plan", {{"strategy", std::string(strategy)}});
    EXPECT_EQ(g.value(r1).arena_offset, g.value(a).arena_offset) << strategy;
    EXPECT_EQ(g.value(r2).arena_offset, g.value(a).arena_offset) << strategy;
    EXPECT_NE(g.value(b).arena_offset, g.value(a).arena_offset) << strategy;  // a is read by c
    EXPECT_GE(g.value(of_input).arena_offset, 0) << strategy;
    expect_valid_plan(g, 64);
  }
}

TEST(MemoryPlan, GreedyBeatsNoneOnResnet) {
  Graph g = optimised(testing::tiny_resnet(2, 17, 9), true);
  run_pass(g, "memory-plan");
  EXPECT_LT(g.annotations.at("memory.peak_bytes"), g.annotations.at("memory.naive_bytes"));
}

}  // namespace
}  // namespace cuvil::passes

namespace cuvil::passes {
namespace {

TEST(MemoryPlanAlignment, OddAlignmentIsRoundedUpToAPowerOfTwo) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", {3});
  ir::ValueId a = g.add_node(ir::OpKind::relu, {x});
  ir::ValueId b = g.add_node(ir::OpKind::sigmoid, {a});
  ir::ValueId c = g.add_node(ir::OpKind::add, {a, b});
  g.mark_output(c);
  const Pass* pass = find_pass("memory-plan");
  ASSERT_NE(pass, nullptr);
  pass->run(g, {{"strategy", std::string("first-fit")}, {"alignment", int64_t{737}}});
  for (ir::ValueId v : {a, b, c}) EXPECT_EQ(g.value(v).arena_offset % 1024, 0) << v;
}

}  // namespace
}  // namespace cuvil::passes
