// layout's blocked_convs: chosen conv classes run in nchw16c (pools after them too), with
// reorders only at the boundaries; the reference interpreter and the compiled pipeline agree.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "lower_support.h"
#include "passes/cuvilpass.h"
#include "passes/select_lowering.h"
#include "test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using testing::add_conv;
using testing::count_ops;
using testing::max_error_after;
using testing::run_pass;

void run_blocked(Graph& g, const std::string& blocked, const std::string& layout = "nhwc") {
  run_pass(g, "layout", {{"memory_layout", layout}, {"blocked_convs", blocked}});
}

std::string layout_of(const ir::Node& n) {
  return n.attrs.get_string("layout", "nchw");
}

class BlockedConvs : public ::testing::TestWithParam<std::string> {};

TEST_P(BlockedConvs, ResnetMatchesReference) {
  for (int64_t channels : {1, 3, 7, 17}) {
    for (int64_t spatial : {1, 5, 9}) {
      SCOPED_TRACE("C=" + std::to_string(channels) + " S=" + std::to_string(spatial));
      const Graph before = testing::tiny_resnet(2, channels, spatial);
      Graph after = before;
      run_blocked(after, GetParam());
      EXPECT_LT(max_error_after(before, after), 1e-4);
    }
  }
}

TEST_P(BlockedConvs, UnetBlockMatchesReference) {
  for (int64_t channels : {3, 7}) {
    for (const char* layout : {"nchw", "nhwc"}) {
      const Graph before = testing::tiny_unet_block(2, channels, 5);
      Graph after = before;
      run_blocked(after, GetParam(), layout);
      EXPECT_LT(max_error_after(before, after), 1e-4) << "C=" << channels << " " << layout;
    }
  }
}

TEST_P(BlockedConvs, FoldedFusedAndCompiledMatchesReference) {
  for (int64_t channels : {3, 17}) {
    const Graph before = testing::tiny_resnet(1, channels, 9);
    Graph g = before;
    run_pass(g, "fold-batchnorm");
    run_blocked(g, GetParam());
    run_pass(g, "fuse-elementwise");
    run_pass(g, "select-lowering");
    EXPECT_LT(max_error_after(before, g), 1e-4) << "C=" << channels;
    for (int threads : {1, 2}) {
      EXPECT_LT(testing::compiled_error(g, threads), 1e-4) << "C=" << channels;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Choices, BlockedConvs, ::testing::Values("3x3", "3x3+other", "all"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = ch == '+' ? '_' : ch;
                           return name;
                         });

TEST(BlockedConvs, NoneChangesNothing) {
  Graph blocked = testing::tiny_resnet(1, 7, 5);
  Graph plain = blocked;
  run_blocked(blocked, "none");
  run_pass(plain, "layout", {{"memory_layout", "nhwc"}});
  EXPECT_EQ(blocked.nodes().size(), plain.nodes().size());
  for (const ir::Node& n : blocked.nodes()) EXPECT_NE(layout_of(n), "nchw16c") << n.name;
}

TEST(BlockedConvs, AllKeepsTheFoldedResnetBlockedUpToTheGlobalPool) {
  Graph g = testing::tiny_resnet(1, 7, 9);
  run_pass(g, "fold-batchnorm");
  run_blocked(g, "all");
  for (const ir::Node& n : g.nodes()) {
    if (n.op == OpKind::conv2d || n.op == OpKind::max_pool2d) {
      EXPECT_EQ(layout_of(n), "nchw16c") << n.name;
    }
  }
  // Into blocks once (pad 3 -> 16 channels: one concat with zeros), out once before the
  // global pool (14 channels: merged then sliced).
  EXPECT_EQ(count_ops(g, OpKind::concat), 1);
  EXPECT_EQ(count_ops(g, OpKind::slice), 1);
  EXPECT_EQ(g.annotations.at("layout.transposes_inserted"), 2);
}

TEST(BlockedConvs, ThreeByThreeLeavesOtherClassesInMemoryLayout) {
  Graph g = testing::tiny_resnet(1, 7, 9);
  run_pass(g, "fold-batchnorm");
  run_blocked(g, "3x3");
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::conv2d) continue;
    EXPECT_EQ(layout_of(n), conv_class(g, n) == "conv_3x3" ? "nchw16c" : "nhwc") << n.name;
  }
}

TEST(BlockedConvs, GroupedConvStaysInMemoryLayout) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 6, 5, 5});
  g.mark_output(add_conv(g, x, 6, 9, 3, 1, true, 1, "nchw", 3));
  const Graph before = g;
  run_blocked(g, "all");
  for (const ir::Node& n : g.nodes()) {
    if (n.op == OpKind::conv2d) {
      EXPECT_EQ(layout_of(n), "nhwc");
    }
  }
  EXPECT_LT(max_error_after(before, g), 1e-4);
}

// The blocked kernel has no dilation: dilated convs keep the memory layout (and run direct).
TEST(BlockedConvs, DilatedConvStaysInMemoryLayout) {
  for (const char* choice : {"3x3", "3x3+other", "all"}) {
    Graph g;
    const ValueId x = g.add_input("x", {1, 6, 9, 7});
    ValueId y = testing::add_dilated_conv(g, x, 6, 9, 3, {2, 2}, 1, {2, 2}, 1);
    y = add_conv(g, y, 9, 5, 3, 1, true, 3);  // undilated: blocked
    g.mark_output(y);
    const Graph before = g;
    run_blocked(g, choice);
    run_pass(g, "select-lowering");
    for (const ir::Node& n : g.nodes()) {
      if (n.op != OpKind::conv2d) continue;
      const bool dilated = n.attrs.has("dilation");
      EXPECT_EQ(layout_of(n), dilated ? "nhwc" : "nchw16c") << choice << " " << n.name;
      if (dilated) {
        EXPECT_EQ(n.attrs.get_string("impl", ""), "conv2d.direct_nhwc") << choice;
      }
    }
    EXPECT_LT(max_error_after(before, g), 1e-4) << choice;
  }
}

// Depthwise convs (also the 1 -> 1 channel one, which has groups 1) keep the memory layout and
// their NHWC kernel under every blocked_convs choice.
TEST(BlockedConvs, DepthwiseConvStaysInMemoryLayout) {
  for (const char* choice : {"3x3", "3x3+other", "all"}) {
    Graph g;
    const ValueId x = g.add_input("x", {1, 6, 7, 7});
    ValueId y = add_conv(g, x, 6, 6, 3, 1, true, 1, "nchw", 6);
    y = add_conv(g, y, 6, 6, 5, 2, true, 2, "nchw", 6);
    g.mark_output(y);
    const ValueId gray = g.add_input("gray", {1, 1, 7, 7});
    g.mark_output(add_conv(g, gray, 1, 1, 3, 1, true, 3));
    const Graph before = g;
    run_blocked(g, choice);
    run_pass(g, "select-lowering");
    int64_t convs = 0;
    for (const ir::Node& n : g.nodes()) {
      if (n.op != OpKind::conv2d) continue;
      ++convs;
      EXPECT_EQ(layout_of(n), "nhwc") << choice << " " << n.name;
      EXPECT_EQ(n.attrs.get_string("impl", ""), "conv2d.depthwise_nhwc") << choice << " " << n.name;
    }
    EXPECT_EQ(convs, 3);
    EXPECT_LT(max_error_after(before, g), 1e-4) << choice;
  }
}

TEST(BlockedConvs, SelectLoweringRunsBlockedConvsDirectAndCountsOtherChoicesAsFallbacks) {
  Graph g = testing::tiny_resnet(1, 7, 9);
  run_blocked(g, "all");
  Graph direct = g;
  run_pass(direct, "select-lowering", {{"conv_1x1", "direct"}, {"conv_3x3", "direct"}});
  run_pass(g, "select-lowering",
           {{"conv_1x1", "gemm"}, {"conv_3x3", "im2col"}, {"conv_other", "onednn"}});
  int64_t convs = 0;
  for (const Graph* graph : {&direct, &g}) {
    for (const ir::Node& n : graph->nodes()) {
      if (n.op != OpKind::conv2d) continue;
      convs += graph == &g;
      EXPECT_EQ(n.attrs.get_string("impl", ""), "conv2d.direct_nchw16c") << n.name;
    }
  }
  EXPECT_EQ(direct.annotations["select-lowering.fallbacks"], 0);
  EXPECT_EQ(g.annotations["select-lowering.fallbacks"], convs);
}

TEST(BlockedConvs, RunningLayoutTwiceOnABlockedGraphIsRejected) {
  Graph g = testing::tiny_resnet(1, 7, 5);
  run_blocked(g, "all");
  EXPECT_THROW(run_blocked(g, "all"), UserError);
}

TEST(BlockedConvs, UnknownChoiceInConfigIsRejected) {
  const std::string text =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n"
      "  - name: layout\n    params: { blocked_convs: 1x1 }\n";
  EXPECT_THROW(parse_cuvilpass(text, "bad.cuvilpass"), UserError);
}

}  // namespace
}  // namespace cuvil::passes
