// select-lowering: op classes, every choice compiled and run against the reference interpreter
// in both layouts, fallbacks for choices that cannot run a node, and respect for existing "impl".
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
using Ints = std::vector<int64_t>;
using testing::add_conv;
using testing::add_dilated_conv;
using testing::compiled_error;
using testing::random_constant;
using testing::run_pass;

// tiny_resnet's convs (3x3 stem from 3 channels, 3x3, 1x1 stride 2) plus a grouped 3x3, a
// 7x7 stride-2 conv and a 1x1, then the linear head.
Graph conv_net(int64_t channels, int64_t spatial) {
  Graph g = testing::tiny_resnet(1, channels, spatial);
  const ValueId x = g.add_input("x2", {2, 6, spatial, spatial});
  ValueId y = add_conv(g, x, 6, 9, 3, 1, true, 101, "nchw", 3);
  y = g.add_node(OpKind::relu, {y});
  y = add_conv(g, y, 9, 17, 7, 2, true, 102);
  y = add_conv(g, y, 17, 7, 1, 1, false, 103);
  g.mark_output(y);
  return g;
}

Graph product_net() {
  Graph g;
  const ValueId a = g.add_input("a", {2, 3, 5, 7});
  const ValueId b = g.add_input("b", {3, 7, 9});
  ValueId y = g.add_node(OpKind::matmul, {a, b});
  y = g.add_node(OpKind::linear,
                 {y, random_constant(g, "w", {17, 9}, 1), random_constant(g, "bias", {17}, 2)});
  g.mark_output(g.add_node(OpKind::relu, {y}));
  return g;
}

// layout -> fuse-elementwise -> select-lowering with `choices`, compiled vs the reference.
double error_with(const Graph& original, const std::string& layout, const ParamMap& choices,
                  int threads = 2) {
  Graph g = original;
  run_pass(g, "fold-batchnorm");
  run_pass(g, "layout", {{"memory_layout", layout}});
  run_pass(g, "fuse-elementwise");
  run_pass(g, "select-lowering", choices);
  const auto inputs = ir::random_inputs(original, 11);
  const auto want = runtime::reference::interpret(original, inputs);
  runtime::Executor executor(lower(g, {threads}));
  const auto got = executor.run(inputs);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, ir::max_relative_error(got[i], want[i]));
  }
  return worst;
}

TEST(SelectLowering, ClassifiesConvolutions) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 4, 9, 9});
  add_conv(g, x, 4, 5, 1, 1, false, 1);
  add_conv(g, x, 4, 5, 3, 1, false, 2);
  add_conv(g, x, 4, 5, 3, 2, false, 3);
  add_conv(g, x, 4, 5, 1, 2, false, 4);
  add_conv(g, x, 4, 5, 7, 1, false, 5);
  const std::vector<std::string> want = {"conv_1x1", "conv_3x3", "conv_other", "conv_other",
                                         "conv_other"};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(conv_class(g, g.nodes()[i]), want[i]);
}

// An inverted residual block in miniature (MobileNetV2): 1x1 expand, depthwise 3x3 (stride 1
// then a 5x5 stride 2 one), 1x1 project, residual add; plus a 1 -> 1 channel conv.
Graph mobile_net(int64_t channels, int64_t spatial) {
  Graph g;
  const ValueId x = g.add_input("x", {1, channels, spatial, spatial});
  const int64_t wide = channels * 3;
  ValueId y = g.add_node(OpKind::relu, {add_conv(g, x, channels, wide, 1, 1, true, 201)});
  y = g.add_node(OpKind::relu, {add_conv(g, y, wide, wide, 3, 1, true, 202, "nchw", wide)});
  y = add_conv(g, y, wide, channels, 1, 1, false, 203);
  y = g.add_node(OpKind::add, {y, x});
  y = add_conv(g, y, channels, channels, 5, 2, true, 204, "nchw", channels);
  g.mark_output(y);
  const ValueId gray = g.add_input("gray", {1, 1, spatial, spatial});
  g.mark_output(add_conv(g, gray, 1, 1, 3, 1, true, 205));
  return g;
}

// Depthwise convolutions and grouped ones of 2, 4 or 8 channels per group in and out are one
// class, checked before the kernel size.
TEST(SelectLowering, ClassifiesDepthwiseAndNarrowGroupConvolutionsFirst) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 6, 9, 9});
  add_conv(g, x, 6, 6, 3, 1, false, 1, "nchw", 6);   // depthwise 3x3 stride 1
  add_conv(g, x, 6, 6, 1, 1, false, 2, "nchw", 6);   // depthwise 1x1
  add_conv(g, x, 6, 12, 5, 2, false, 3, "nchw", 6);  // depthwise, multiplier 2
  add_conv(g, x, 6, 6, 3, 1, false, 4, "nchw", 3);   // grouped, 2 channels per group in and out
  add_conv(g, x, 6, 6, 3, 1, false, 5);              // groups 1
  const ValueId gray = g.add_input("gray", {1, 1, 9, 9});
  add_conv(g, gray, 1, 1, 3, 1, false, 6);  // 1 -> 1 channel: depthwise
  add_conv(g, gray, 1, 8, 3, 1, false, 7);  // 1 -> 8 channels, groups 1: an ordinary conv
  const ValueId wide = g.add_input("wide", {1, 48, 9, 9});
  add_conv(g, wide, 48, 48, 3, 1, false, 8, "nchw", 3);    // 16 channels per group
  add_conv(g, wide, 48, 48, 3, 1, false, 9, "nchw", 16);   // 3 per group: not a divisor of 16
  add_conv(g, wide, 48, 96, 3, 1, false, 10, "nchw", 12);  // 4 in, 8 out per group
  add_conv(g, wide, 48, 48, 1, 1, false, 11, "nchw", 6);   // 8 per group, 1x1
  const std::vector<std::string> want = {"conv_depthwise", "conv_depthwise", "conv_depthwise",
                                         "conv_depthwise", "conv_3x3",       "conv_depthwise",
                                         "conv_3x3",       "conv_3x3",       "conv_3x3",
                                         "conv_3x3",       "conv_depthwise"};
  ASSERT_EQ(g.nodes().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(conv_class(g, g.nodes()[i]), want[i]) << i;
}

// DeepLab-style dilated convolutions at odd sizes: 3x3 dilation 2 (padded to keep the size),
// depthwise 3x3 dilation 3, 3x3 stride 2 dilation 2, 3x3 dilation {1, 3}, a dilated 1x1 (no
// effect) and an undilated 3x3 for contrast.
Graph dilated_net(int64_t channels, int64_t h, int64_t w) {
  Graph g;
  const ValueId x = g.add_input("x", {1, channels, h, w});
  const int64_t c = channels;
  ValueId y = add_dilated_conv(g, x, c, 7, 3, {2, 2}, 1, {2, 2}, 301);
  y = add_dilated_conv(g, y, 7, 7, 3, {3, 3}, 1, {3, 3}, 303, 7);
  y = add_dilated_conv(g, y, 7, 5, 3, {2, 2}, 2, {1, 1}, 305);
  y = add_dilated_conv(g, y, 5, 6, 3, {1, 3}, 1, {1, 2}, 307);
  y = add_dilated_conv(g, y, 6, 9, 1, {2, 2}, 1, {0, 0}, 309);
  g.mark_output(add_conv(g, y, 9, 4, 3, 1, true, 311));
  return g;
}

// A dilated 3x3 of stride 1 is conv_3x3 (Winograd runs it on the output's phases); strided
// dilated ones are conv_other, a dilated 1x1 conv_1x1.
TEST(SelectLowering, DilatedStrideOneThreeByThreesAreThreeByThreeClass) {
  const Graph g = dilated_net(3, 17, 13);
  const std::vector<std::string> want = {"conv_3x3", "conv_depthwise", "conv_other",
                                         "conv_3x3", "conv_1x1",       "conv_3x3"};
  ASSERT_EQ(g.nodes().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(conv_class(g, g.nodes()[i]), want[i]) << i;
}

// Every kernel a dilated convolution can be lowered to runs dilation: im2col, the direct,
// depthwise and Winograd kernels (NHWC; Winograd from 8 input channels, below it the direct
// kernel), oneDNN; NCHW direct and Winograd fall back to im2col. Every combination matches the
// reference.
TEST(SelectLowering, DilatedConvolutionsRunOnKernelsWithDilationUnderEveryChoice) {
  const std::vector<std::string> other = {"im2col", "direct", "onednn", "direct"};
  const std::vector<std::string> depthwise = {"im2col", "depthwise", "onednn", "depthwise"};
  const std::vector<std::string> three = {"im2col", "direct", "onednn", "winograd"};
  for (const Graph& g : {dilated_net(9, 17, 13), dilated_net(1, 7, 9)}) {
    for (const char* layout : {"nchw", "nhwc"}) {
      for (size_t i = 0; i < other.size(); ++i) {
        const ParamMap p = {{"conv_other", other[i]},
                            {"conv_depthwise", depthwise[i]},
                            {"conv_3x3", three[i]},
                            {"winograd_min_tiles", int64_t{0}}};
        for (int threads : {1, 2}) {
          EXPECT_LT(error_with(g, layout, p, threads), 1e-4)
              << layout << " " << other[i] << "/" << three[i] << " threads=" << threads;
        }
        Graph lowered = g;
        run_pass(lowered, "layout", {{"memory_layout", std::string(layout)}});
        run_pass(lowered, "select-lowering", p);
        int64_t winograd = 0;
        for (const ir::Node& n : lowered.nodes()) {
          const std::string cls = n.op == OpKind::conv2d ? conv_class(lowered, n) : "";
          if (cls.empty() || n.attrs.get_ints("dilation", {1, 1}) == Ints{1, 1} ||
              cls == "conv_1x1")
            continue;
          const std::string choice = cls == "conv_3x3"         ? three[i]
                                     : cls == "conv_depthwise" ? depthwise[i]
                                                               : other[i];
          const bool nhwc = std::string(layout) == "nhwc";
          std::string want = "conv2d.im2col";
          if (choice == "onednn") want = "conv2d.onednn";
          if (nhwc && choice == "depthwise") want = "conv2d.depthwise_nhwc";
          if (nhwc && choice == "direct") want = "conv2d.direct_nhwc";
          if (nhwc && choice == "winograd") {
            want = lowered.value(n.inputs[1]).shape[1] >= 8 ? "conv2d.winograd_nhwc"
                                                            : "conv2d.direct_nhwc";
          }
          winograd += want == "conv2d.winograd_nhwc";
          EXPECT_EQ(n.attrs.get_string("impl", ""), want)
              << n.name << " " << layout << " " << choice;
        }
        if (std::string(layout) == "nhwc" && three[i] == "winograd" &&
            g.value(g.inputs()[0]).shape[1] >= 8) {
          EXPECT_GT(winograd, 0);
        }
      }
    }
  }
}

// An atrous pyramid's wide rates read mostly padding on a small map: Winograd (which computes
// every tap) takes a dilated 3x3 only while its window spans at most half the output; the direct
// kernel, which skips padded taps, takes the rest.
TEST(SelectLowering, WinogradTakesDilatedThreeByThreesWhoseWindowFitsTheMap) {
  auto impl = [](int64_t rate) {
    Graph g;
    const ValueId x = g.add_input("x", {1, 16, 28, 28});
    g.mark_output(add_dilated_conv(g, x, 16, 16, 3, {rate, rate}, 1, {rate, rate}, 7));
    run_pass(g, "layout", {{"memory_layout", "nhwc"}});
    run_pass(g, "select-lowering", {});
    for (const ir::Node& n : g.nodes()) {
      if (n.op == OpKind::conv2d) return n.attrs.get_string("impl", "");
    }
    return std::string("no conv");
  };
  EXPECT_EQ(impl(1), "conv2d.winograd_nhwc");
  EXPECT_EQ(impl(2), "conv2d.winograd_nhwc");
  EXPECT_EQ(impl(7), "conv2d.winograd_nhwc");  // span 14 of 28
  EXPECT_EQ(impl(8), "conv2d.direct_nhwc");
  EXPECT_EQ(impl(12), "conv2d.direct_nhwc");
}

TEST(SelectLowering, DepthwiseConvsGetTheDepthwiseKernelByDefaultAndIm2colWhenChosen) {
  for (const char* choice : {"", "depthwise", "im2col", "onednn"}) {
    Graph g = mobile_net(5, 9);
    run_pass(g, "layout", {{"memory_layout", "nhwc"}});
    run_pass(g, "select-lowering",
             *choice ? ParamMap{{"conv_depthwise", std::string(choice)}} : ParamMap{});
    const std::string want = !*choice || std::string(choice) == "depthwise"
                                 ? "conv2d.depthwise_nhwc"
                                 : "conv2d." + std::string(choice);
    int64_t depthwise = 0;
    for (const ir::Node& n : g.nodes()) {
      if (n.op != OpKind::conv2d || conv_class(g, n) != "conv_depthwise") continue;
      EXPECT_EQ(n.attrs.get_string("layout", ""), "nhwc") << n.name;
      EXPECT_EQ(n.attrs.get_string("impl", ""), want) << n.name << " choice '" << choice << "'";
      ++depthwise;
    }
    EXPECT_EQ(depthwise, 3);
    EXPECT_EQ(g.annotations["select-lowering.fallbacks"], 0);
  }
}

TEST(SelectLowering, DepthwiseOnNchwFallsBackToIm2colAndCountsIt) {
  Graph g = mobile_net(5, 9);
  run_pass(g, "layout", {{"memory_layout", "nchw"}});
  run_pass(g, "select-lowering", {{"conv_1x1", "gemm"}});
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::conv2d || conv_class(g, n) != "conv_depthwise") continue;
    EXPECT_EQ(n.attrs.get_string("impl", ""), "conv2d.im2col") << n.name;
  }
  EXPECT_EQ(g.annotations["select-lowering.fallbacks"], 3);
}

TEST(SelectLowering, EveryDepthwiseChoiceMatchesReferenceInBothLayouts) {
  for (const Graph& g : {mobile_net(5, 9), mobile_net(7, 12)}) {
    for (const char* layout : {"nchw", "nhwc"}) {
      for (const char* choice : {"depthwise", "im2col", "onednn"}) {
        for (int threads : {1, 2}) {
          EXPECT_LT(error_with(g, layout, {{"conv_depthwise", std::string(choice)}}, threads), 1e-4)
              << layout << " " << choice << " threads=" << threads;
        }
      }
    }
  }
}

TEST(SelectLowering, EveryConvChoiceMatchesReferenceInBothLayouts) {
  const std::vector<std::string> one = {"gemm", "im2col", "direct", "onednn"};
  const std::vector<std::string> other = {"im2col", "direct", "onednn", "direct"};
  for (const Graph& g : {conv_net(7, 9), conv_net(3, 5)}) {
    for (const char* layout : {"nchw", "nhwc"}) {
      for (size_t i = 0; i < one.size(); ++i) {
        const ParamMap p = {{"conv_1x1", one[i]}, {"conv_3x3", other[i]}, {"conv_other", other[i]}};
        EXPECT_LT(error_with(g, layout, p), 1e-4) << layout << " " << one[i] << "/" << other[i];
      }
    }
  }
}

TEST(SelectLowering, WinogradMatchesReferenceInBothLayouts) {
  for (const Graph& g : {conv_net(7, 9), conv_net(3, 5)}) {
    for (const char* layout : {"nchw", "nhwc"}) {
      EXPECT_LT(
          error_with(g, layout, {{"conv_3x3", "winograd"}, {"winograd_min_tiles", int64_t{0}}}),
          1e-4)
          << layout;
    }
  }
}

// Winograd runs ungrouped 3x3 stride-1 NHWC convolutions; a grouped one falls back to im2col.
TEST(SelectLowering, WinogradTakesPlainThreeByThreeAndCountsFallbacks) {
  Graph g = conv_net(8, 9);
  // A grouped 3x3 of 16 channels per group: Winograd cannot run it, the first fallback that can
  // does (the direct kernel, in NHWC).
  const ValueId x = g.add_input("x3", {1, 32, 9, 9});
  g.mark_output(add_conv(g, x, 32, 32, 3, 1, false, 104, "nchw", 2));
  run_pass(g, "layout", {{"memory_layout", "nhwc"}});
  run_pass(g, "select-lowering", {{"conv_3x3", "winograd"}, {"winograd_min_tiles", int64_t{0}}});
  int64_t winograd = 0, grouped = 0, few = 0;
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::conv2d || conv_class(g, n) != "conv_3x3") continue;
    const bool is_grouped = n.attrs.get_int("groups", 1) > 1;
    const bool is_few = g.value(n.inputs[1]).shape[1] < 8;  // the stem, the 2-per-group conv
    const char* want = is_few       ? "conv2d.direct_nhwc"
                       : is_grouped ? "conv2d.direct_nhwc"
                                    : "conv2d.winograd_nhwc";
    EXPECT_EQ(n.attrs.get_string("impl", ""), want) << n.name;
    (is_few ? few : is_grouped ? grouped : winograd) += 1;
  }
  EXPECT_GT(winograd, 0);
  EXPECT_EQ(grouped, 1);
  EXPECT_EQ(few, 2);
  EXPECT_EQ(g.annotations["select-lowering.fallbacks"], 1);
}

// ResNeXt-style narrow groups (4 and 8 channels per group) run the depthwise kernel's grouped
// tiles in NHWC by default, im2col in NCHW, and match the reference under both.
TEST(SelectLowering, NarrowGroupsRunTheDepthwiseKernelAndMatchReference) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 32, 9, 7});
  ValueId y = add_conv(g, x, 32, 32, 3, 1, true, 401, "nchw", 8);  // 4 per group
  y = add_conv(g, y, 32, 32, 3, 2, true, 402, "nchw", 4);          // 8 per group, stride 2
  g.mark_output(y);
  for (const char* layout : {"nhwc", "nchw"}) {
    Graph lowered = g;
    run_pass(lowered, "layout", {{"memory_layout", std::string(layout)}});
    run_pass(lowered, "select-lowering", {});
    for (const ir::Node& n : lowered.nodes()) {
      if (n.op != OpKind::conv2d) continue;
      EXPECT_EQ(conv_class(lowered, n), "conv_depthwise") << n.name;
      EXPECT_EQ(n.attrs.get_string("impl", ""),
                std::string(layout) == "nhwc" ? "conv2d.depthwise_nhwc" : "conv2d.im2col")
          << n.name << " " << layout;
    }
    for (int threads : {1, 2}) EXPECT_LT(error_with(g, layout, {}, threads), 1e-4) << layout;
  }
}

// In NCHW neither Winograd nor the direct kernel runs a 3x3: the chain ends at im2col, which
// runs every convolution.
TEST(SelectLowering, WinogradOnNchwFallsThroughTheChainToIm2col) {
  Graph g = conv_net(8, 9);
  run_pass(g, "layout", {{"memory_layout", "nchw"}});
  run_pass(g, "select-lowering", {{"conv_3x3", "winograd"}, {"winograd_min_tiles", int64_t{0}}});
  int64_t three = 0;
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::conv2d || conv_class(g, n) != "conv_3x3") continue;
    EXPECT_EQ(n.attrs.get_string("impl", ""), "conv2d.im2col") << n.name;
    ++three;
  }
  EXPECT_GT(three, 0);
  EXPECT_GE(g.annotations["select-lowering.fallbacks"], three);  // the NCHW direct ones too
}

// A conv_3x3 chosen for Winograd runs direct below 8 input channels (per group): Winograd's
// products have K = the input channels.
TEST(SelectLowering, WinogradWithFewInputChannelsRunsDirect) {
  auto impl = [](int64_t channels) {
    Graph g;
    const ValueId x = g.add_input("x", {1, channels, 16, 16});
    g.mark_output(add_conv(g, x, channels, 32, 3, 1, false, 1));
    run_pass(g, "layout", {{"memory_layout", "nhwc"}});
    run_pass(g, "select-lowering", {{"conv_3x3", "winograd"}, {"winograd_min_tiles", int64_t{0}}});
    for (const ir::Node& n : g.nodes()) {
      if (n.op == OpKind::conv2d) return n.attrs.get_string("impl", "");
    }
    return std::string();
  };
  EXPECT_EQ(impl(3), "conv2d.direct_nhwc");
  EXPECT_EQ(impl(7), "conv2d.direct_nhwc");
  EXPECT_EQ(impl(8), "conv2d.winograd_nhwc");
}

// Below winograd_min_tiles 2x2 output tiles a conv_3x3 chosen for Winograd runs direct.
TEST(SelectLowering, WinogradWithFewTilesRunsDirect) {
  auto impls = [](int64_t spatial, int64_t min_tiles) {
    Graph g;
    const ValueId x = g.add_input("x", {1, 8, spatial, spatial});
    g.mark_output(add_conv(g, x, 8, 8, 3, 1, false, 1));
    run_pass(g, "layout", {{"memory_layout", "nhwc"}});
    run_pass(g, "select-lowering", {{"conv_3x3", "winograd"}, {"winograd_min_tiles", min_tiles}});
    for (const ir::Node& n : g.nodes()) {
      if (n.op == OpKind::conv2d) return n.attrs.get_string("impl", "");
    }
    return std::string();
  };
  // 7x7 outputs have 4 x 4 = 16 tiles; 14x14 have 49.
  EXPECT_EQ(impls(7, 32), "conv2d.direct_nhwc");
  EXPECT_EQ(impls(7, 16), "conv2d.winograd_nhwc");
  EXPECT_EQ(impls(14, 32), "conv2d.winograd_nhwc");
  EXPECT_EQ(impls(7, 0), "conv2d.winograd_nhwc");
}

// Above winograd_max_tile_kib KiB of weights per 2x2 output tile a conv_3x3 chosen for Winograd
// runs direct: many channels over few tiles.
TEST(SelectLowering, WinogradWithHeavyWeightsPerTileRunsDirect) {
  auto impls = [](int64_t channels, int64_t spatial, int64_t max_kib) {
    Graph g;
    const ValueId x = g.add_input("x", {1, channels, spatial, spatial});
    g.mark_output(add_conv(g, x, channels, channels, 3, 1, false, 1));
    run_pass(g, "layout", {{"memory_layout", "nhwc"}});
    run_pass(g, "select-lowering",
             {{"conv_3x3", "winograd"},
              {"winograd_min_tiles", int64_t{0}},
              {"winograd_max_tile_kib", max_kib}});
    for (const ir::Node& n : g.nodes()) {
      if (n.op == OpKind::conv2d) return n.attrs.get_string("impl", "");
    }
    return std::string();
  };
  // 64 channels: 144 KiB of weights; 16x16 outputs have 64 tiles (2.25 KiB each), 2x2 one tile.
  EXPECT_EQ(impls(64, 16, 128), "conv2d.winograd_nhwc");
  EXPECT_EQ(impls(64, 2, 128), "conv2d.direct_nhwc");
  EXPECT_EQ(impls(64, 2, 144), "conv2d.winograd_nhwc");  // exactly at the limit: Winograd
  EXPECT_EQ(impls(64, 16, 2), "conv2d.direct_nhwc");
}

TEST(SelectLowering, EveryProductChoiceMatchesReference) {
  for (const char* choice : {"gemm", "onednn"}) {
    for (int threads : {1, 2}) {
      EXPECT_LT(
          error_with(product_net(), "nhwc", {{"linear", choice}, {"matmul", choice}}, threads),
          1e-4)
          << choice;
    }
  }
}

TEST(SelectLowering, SetsImplOnEveryConvLinearAndMatmul) {
  Graph g = conv_net(7, 9);
  run_pass(g, "layout", {{"memory_layout", "nhwc"}});
  run_pass(g, "select-lowering",
           {{"conv_1x1", "onednn"}, {"conv_3x3", "direct"}, {"conv_other", "im2col"}});
  for (const ir::Node& n : g.nodes()) {
    if (n.op == OpKind::conv2d) {
      const std::string cls = conv_class(g, n);
      const std::string want = cls == "conv_1x1"   ? "conv2d.onednn"
                               : cls == "conv_3x3" ? "conv2d.direct_nhwc"
                                                   : "conv2d.im2col";
      EXPECT_EQ(n.attrs.get_string("impl", ""), want) << n.name;
    }
    if (n.op == OpKind::linear) {
      EXPECT_EQ(n.attrs.get_string("impl", ""), "linear.gemm");
    }
  }
  EXPECT_EQ(g.annotations["select-lowering.fallbacks"], 0);
}

TEST(SelectLowering, DirectOnNchwFallsBackToIm2colAndCountsIt) {
  Graph g = conv_net(7, 9);
  run_pass(g, "layout", {{"memory_layout", "nchw"}});
  run_pass(g, "select-lowering",
           {{"conv_1x1", "gemm"}, {"conv_3x3", "direct"}, {"conv_other", "direct"}});
  int64_t non_1x1 = 0;
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::conv2d || conv_class(g, n) == "conv_1x1") continue;
    ++non_1x1;
    EXPECT_EQ(n.attrs.get_string("impl", ""), "conv2d.im2col") << n.name;
  }
  EXPECT_EQ(g.annotations["select-lowering.fallbacks"], non_1x1);
}

TEST(SelectLowering, KeepsAnImplAlreadyChosen) {
  Graph g = conv_net(7, 9);
  g.mutable_nodes()[0].attrs.set("impl", std::string("conv2d.im2col"));
  run_pass(g, "select-lowering", {{"conv_3x3", "onednn"}});
  EXPECT_EQ(g.nodes()[0].attrs.get_string("impl", ""), "conv2d.im2col");
}

TEST(SelectLowering, UnknownChoiceInConfigIsRejected) {
  const std::string text =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n"
      "  - name: select-lowering\n    params: { conv_3x3: fft }\n";
  EXPECT_THROW(parse_cuvilpass(text, "bad.cuvilpass"), UserError);
}

}  // namespace
}  // namespace cuvil::passes
