// The oneDNN library lowering (conv2d.onednn, linear.onednn, matmul.onednn) against the
// reference interpreter: both layouts, odd shapes, fused and unfused epilogues, weights that are
// constants (reordered once) or run-time inputs, and a thread count other than the default.
#include <gtest/gtest.h>

#include "base/error.h"
#include "conv_kernel_support.h"
#include "conv_test_graphs.h"

namespace cuvil::runtime {
namespace {

using ir::Graph;
using ir::OpKind;
using testing::conv_cases;
using testing::conv_graph;
using testing::ConvCase;
using testing::prepared_kernel_error;

TEST(OnednnConv, MatchesReferenceInBothLayouts) {
  for (const ConvCase& cc : conv_cases()) {
    for (const char* layout : {"nchw", "nhwc"}) {
      EXPECT_LT(prepared_kernel_error(conv_graph(cc, layout, false, false), "conv2d.onednn", 2),
                1e-4)
          << layout << " c=" << cc.c << " o=" << cc.o << " k=" << cc.k;
    }
  }
}

TEST(OnednnConv, FusedReluAndResidualMatchReference) {
  for (const ConvCase& cc : conv_cases()) {
    for (const char* layout : {"nchw", "nhwc"}) {
      EXPECT_LT(prepared_kernel_error(conv_graph(cc, layout, false, true), "conv2d.onednn", 2),
                1e-4)
          << layout << " c=" << cc.c << " o=" << cc.o;
    }
  }
}

TEST(OnednnConv, RunTimeWeightsAndOneThreadMatchReference) {
  for (const ConvCase& cc : conv_cases()) {
    EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nhwc", true, true), "conv2d.onednn", 1), 1e-4)
        << "c=" << cc.c;
  }
}

TEST(OnednnConv, BroadcastOperandEpilogueMatchesReference) {
  // A per-channel multiplier [C] (broadcast over N, H, W) then a sigmoid: mapped to post-ops
  // or applied after, either way correct.
  for (const char* layout : {"nchw", "nhwc"}) {
    Graph g = conv_graph({1, 7, 5, 5, 17, 3, 1, 1, 1, true}, layout, false, false);
    const bool nhwc = std::string(layout) == "nhwc";
    const ir::Shape scale = nhwc ? ir::Shape{17} : ir::Shape{17, 1, 1};
    const ir::ValueId s = g.add_constant("scale", scale, ir::ConstantInit::normal(0, 1, 9));
    ir::Node& conv = g.mutable_nodes()[0];
    conv.inputs.push_back(s);
    conv.epilogue = {{OpKind::mul, static_cast<int>(conv.inputs.size() - 1)},
                     {OpKind::sigmoid, -1}};
    g.recompute();
    EXPECT_LT(prepared_kernel_error(g, "conv2d.onednn", 2), 1e-4) << layout;
  }
}

Graph linear_graph(const ir::Shape& x, int64_t out, bool bias, bool weights_input) {
  Graph g;
  const int64_t k = x.back();
  std::vector<ir::ValueId> in = {g.add_input("x", x)};
  in.push_back(weights_input ? g.add_input("w", {out, k})
                             : g.add_constant("w", {out, k}, ir::ConstantInit::normal(0, 0.3f, 3)));
  if (bias) in.push_back(g.add_constant("b", {out}, ir::ConstantInit::normal(0, 0.5f, 4)));
  g.mark_output(g.add_node(OpKind::linear, in, {}, "fc"));
  return g;
}

TEST(OnednnLinear, MatchesReferenceWithAndWithoutBias) {
  for (bool bias : {false, true}) {
    for (bool weights_input : {false, true}) {
      EXPECT_LT(prepared_kernel_error(linear_graph({3, 7, 33}, 17, bias, weights_input),
                                      "linear.onednn", 2),
                1e-4);
      EXPECT_LT(
          prepared_kernel_error(linear_graph({1, 5}, 3, bias, weights_input), "linear.onednn", 1),
          1e-4);
    }
  }
}

TEST(OnednnLinear, EpilogueWithResidualAndRowOperandMatchesReference) {
  Graph g = linear_graph({2, 5, 19}, 9, true, false);
  const ir::ValueId residual = g.add_input("residual", {2, 5, 9});
  const ir::ValueId row = g.add_constant("row", {9}, ir::ConstantInit::normal(0, 1, 8));
  ir::Node& fc = g.mutable_nodes()[0];
  fc.inputs.push_back(residual);
  fc.inputs.push_back(row);
  fc.epilogue = {{OpKind::gelu, -1},
                 {OpKind::add, static_cast<int>(fc.inputs.size() - 2)},
                 {OpKind::mul, static_cast<int>(fc.inputs.size() - 1)},
                 {OpKind::silu, -1}};
  g.recompute();
  EXPECT_LT(prepared_kernel_error(g, "linear.onednn", 2), 1e-4);
}

TEST(OnednnLinear, ColumnOperandIsAppliedAfterTheProduct) {
  // A [M, 1] operand has no [M, N] post-op view here: the epilogue runs after oneDNN.
  Graph g = linear_graph({7, 13}, 5, false, false);
  const ir::ValueId col = g.add_input("col", {7, 1});
  ir::Node& fc = g.mutable_nodes()[0];
  fc.inputs.push_back(col);
  fc.epilogue = {{OpKind::sub, static_cast<int>(fc.inputs.size() - 1)}};
  g.recompute();
  EXPECT_LT(prepared_kernel_error(g, "linear.onednn", 2), 1e-4);
}

Graph matmul_graph(const ir::Shape& a, const ir::Shape& b) {
  Graph g;
  g.mark_output(g.add_node(OpKind::matmul, {g.add_input("a", a), g.add_input("b", b)}, {}, "mm"));
  return g;
}

TEST(OnednnMatmul, BatchBroadcastingMatchesReference) {
  EXPECT_LT(prepared_kernel_error(matmul_graph({2, 3, 5, 7}, {3, 7, 9}), "matmul.onednn", 2), 1e-4);
  EXPECT_LT(prepared_kernel_error(matmul_graph({17, 33}, {33, 3}), "matmul.onednn", 2), 1e-4);
  EXPECT_LT(prepared_kernel_error(matmul_graph({1, 4, 1, 8}, {2, 1, 8, 5}), "matmul.onednn", 1),
            1e-4);
}

TEST(OnednnMatmul, ScaledSoftmaxInputEpilogueMatchesReference) {
  Graph g = matmul_graph({2, 3, 5, 7}, {2, 3, 7, 5});
  const ir::ValueId mask = g.add_input("mask", {5, 5});
  ir::Node& mm = g.mutable_nodes()[0];
  mm.inputs.push_back(mask);
  mm.epilogue = {{OpKind::add, static_cast<int>(mm.inputs.size() - 1)}, {OpKind::relu, -1}};
  g.recompute();
  EXPECT_LT(prepared_kernel_error(g, "matmul.onednn", 2), 1e-4);
}

}  // namespace
}  // namespace cuvil::runtime
