// conv2d.direct_nhwc (and the split im2col / 1x1 kernels) against the reference interpreter.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "conv_kernel_support.h"
#include "conv_test_graphs.h"
#include "runtime/cpu/conv_kernels.h"
#include "tests/runtime/isa_sweep.h"

namespace cuvil::runtime {
namespace {

using testing::conv_cases;
using testing::conv_graph;
using testing::ConvCase;
using testing::for_each_isa;
using testing::prepared_kernel_error;

TEST(ConvDirect, MatchesReferenceOnOddShapes) {
  for_each_isa([] {
    for (const ConvCase& cc : conv_cases()) {
      for (int threads : {1, 2}) {
        EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nhwc", false, false), "conv2d.direct_nhwc",
                                        threads),
                  1e-4)
            << describe(cc) << " threads=" << threads;
      }
    }
  });
}

// Dilated windows (DeepLab's and FCN's backbones): unpadded and padded past the dilated span,
// strided, grouped, unequal dilations, 7x7 and 1x3 kernels; several channel passes (weights in
// L1) and both partitions; with and without the fused epilogue.
TEST(ConvDirect, DilatedMatchesReference) {
  struct Dilated {
    ConvCase conv;
    std::vector<int64_t> dilation;
  };
  const std::vector<Dilated> cases = {
      {{1, 3, 17, 17, 17, 3, 1, 2, 1, true}, {2, 2}},
      {{2, 7, 9, 13, 33, 3, 2, 1, 1, false}, {2, 3}},
      {{1, 40, 7, 7, 70, 3, 1, 0, 1, true}, {3, 1}},
      {{1, 12, 11, 9, 9, 3, 1, 4, 3, true}, {4, 4}},
      {{1, 5, 17, 17, 7, 7, 1, 6, 1, true}, {2, 2}},
      {{1, 16, 1, 1, 16, 3, 1, 2, 1, true}, {2, 2}},
  };
  for_each_isa([&] {
    for (const Dilated& d : cases) {
      for (bool epilogue : {false, true}) {
        for (const char* partition : {"rows", "channels"}) {
          ir::Graph g = conv_graph(d.conv, "nhwc", false, epilogue, d.dilation);
          ir::Attrs& attrs = g.mutable_nodes()[0].attrs;
          attrs.set("conv.partition", std::string(partition));
          attrs.set("conv.channels_per_pass", int64_t{16});
          for (int threads : {1, 2}) {
            EXPECT_LT(prepared_kernel_error(g, "conv2d.direct_nhwc", threads), 1e-4)
                << describe(d.conv) << " dilation " << d.dilation[0] << "x" << d.dilation[1]
                << " epilogue=" << epilogue << " " << partition << " threads=" << threads;
          }
        }
      }
    }
  });
}

TEST(ConvDirect, FusedReluAndResidualMatchReference) {
  for (const ConvCase& cc : conv_cases()) {
    EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nhwc", false, true), "conv2d.direct_nhwc", 2),
              1e-4)
        << describe(cc);
  }
}

// Epilogues the tiles apply in registers (column, scalar and element operands; clip, leaky
// ReLU, division), and two the driver applies after the tiles, at output channel counts with a
// vector tail (33, 70) and without (64).
TEST(ConvDirect, EveryLaneEpilogueMatchesReference) {
  for (const ConvCase& cc :
       {ConvCase{1, 17, 9, 9, 33, 3, 1, 1, 1, true}, ConvCase{2, 7, 5, 9, 70, 1, 1, 0, 1, false},
        ConvCase{1, 16, 30, 31, 64, 3, 1, 1, 1, true}}) {
    const ir::Graph plain = conv_graph(cc, "nhwc", false, false);
    const ir::Shape out = plain.value(plain.nodes().back().output).shape;
    for (const auto& steps : testing::lane_epilogue_cases(out)) {
      ir::Graph g = conv_graph(cc, "nhwc", false, false);
      testing::with_epilogue(g, steps);
      EXPECT_LT(prepared_kernel_error(g, "conv2d.direct_nhwc", 2), 1e-4)
          << describe(cc) << " steps=" << steps.size() << " first=" << ir::to_string(steps[0].op);
    }
  }
}

TEST(ConvDirect, WeightsComputedAtRunTimeArePackedPerCall) {
  for (const ConvCase& cc : conv_cases()) {
    EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nhwc", true, false), "conv2d.direct_nhwc", 2),
              1e-4)
        << describe(cc);
  }
}

TEST(ConvDirect, ManyRowsSplitByRowsAndFewRowsByChannels) {
  // 40 output rows (split by rows) vs 3 rows x 130 channels (split by channel blocks).
  for (const ConvCase& cc : {ConvCase{1, 8, 40, 9, 20, 3, 1, 1, 1, true},
                             ConvCase{1, 9, 3, 11, 130, 3, 1, 1, 1, true}}) {
    EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nhwc", false, true), "conv2d.direct_nhwc", 2),
              1e-4)
        << describe(cc);
  }
}

// conv-tiling's knobs: every register tile width (and auto), both thread splits, input channels
// summed in passes of 16 or 32 (c = 40: passes of 16 + 16 + 8), weight prefetch on and off give
// the reference's result.
TEST(ConvDirect, EveryScheduleMatchesReference) {
  std::vector<ConvCase> cases = conv_cases();
  cases.push_back({1, 40, 7, 7, 70, 3, 1, 1, 1, true});  // three channel blocks, 7 x 7 output
  cases.push_back({2, 40, 3, 5, 33, 1, 1, 0, 1, true});  // 1x1: tiles run across rows and images
  for (const ConvCase& cc : cases) {
    for (int64_t vectors = 0; vectors <= 4; ++vectors) {
      for (const char* partition : {"rows", "channels"}) {
        for (int64_t per_pass : {16, 32, 4096}) {
          for (int64_t prefetch : {0, 1}) {
            ir::Graph g = conv_graph(cc, "nhwc", false, true);
            ir::Attrs& attrs = g.mutable_nodes()[0].attrs;
            attrs.set("conv.vectors", vectors);
            attrs.set("conv.partition", std::string(partition));
            attrs.set("conv.channels_per_pass", per_pass);
            attrs.set("conv.prefetch_weights", prefetch);
            EXPECT_LT(prepared_kernel_error(g, "conv2d.direct_nhwc", 2), 1e-4)
                << describe(cc) << " vectors=" << vectors << " partition=" << partition
                << " channels_per_pass=" << per_pass << " prefetch=" << prefetch;
          }
        }
      }
    }
  }
}

TEST(ConvDirect, PlanFollowsTheKnobs) {
  ir::Graph g = conv_graph({1, 64, 7, 7, 128, 3, 1, 1, 1, true}, "nhwc", false, false);
  ir::Attrs& attrs = g.mutable_nodes()[0].attrs;
  const KernelInfo* k = find_kernel(ir::OpKind::conv2d, "conv2d.direct_nhwc");
  ASSERT_NE(k, nullptr);
  cpu::DirectConvPlan p = cpu::conv2d_direct_plan(testing::step_for(g, *k), 2);
  EXPECT_EQ(p.vectors, 2);  // auto on 7-pixel rows: 7 pixels (one row) x 32 channels
  EXPECT_EQ(p.pixels_per_tile, 7);
  EXPECT_FALSE(p.tiles_span_rows);
  EXPECT_EQ(p.thread_parts, 2);  // 7 rows for 2 threads: split channel blocks
  EXPECT_EQ(p.channels_per_pass, 64);
  attrs.set("conv.vectors", int64_t{3});
  attrs.set("conv.partition", std::string("rows"));
  attrs.set("conv.channels_per_pass", int64_t{40});
  p = cpu::conv2d_direct_plan(testing::step_for(g, *k), 2);
  EXPECT_EQ(p.vectors, 3);
  EXPECT_EQ(p.thread_parts, 1);
  EXPECT_EQ(p.channels_per_pass, 32);  // rounded down to whole blocks of 16
  // 1x1 stride 1: tiles run across rows; auto picks 4 vectors x 6 pixels, 2 vectors give 14.
  ir::Graph one = conv_graph({1, 64, 7, 7, 128, 1, 1, 0, 1, true}, "nhwc", false, false);
  p = cpu::conv2d_direct_plan(testing::step_for(one, *k), 2);
  EXPECT_TRUE(p.tiles_span_rows);
  EXPECT_EQ(p.vectors, 4);
  EXPECT_EQ(p.pixels_per_tile, 6);
  one.mutable_nodes()[0].attrs.set("conv.vectors", int64_t{2});
  p = cpu::conv2d_direct_plan(testing::step_for(one, *k), 2);
  EXPECT_EQ(p.pixels_per_tile, 14);
  // 1x1 stride 2 (a downsampling conv): its input pixels gathered, the same flat tiles.
  const ir::Graph strided =
      conv_graph({1, 64, 14, 14, 128, 1, 2, 0, 1, true}, "nhwc", false, false);
  p = cpu::conv2d_direct_plan(testing::step_for(strided, *k), 2);
  EXPECT_TRUE(p.tiles_span_rows);
  EXPECT_EQ(p.vectors, 4);
  // Padding needs the bordered input: tiles stay within rows.
  const ir::Graph padded = conv_graph({1, 64, 7, 7, 128, 1, 2, 1, 1, true}, "nhwc", false, false);
  EXPECT_FALSE(cpu::conv2d_direct_plan(testing::step_for(padded, *k), 2).tiles_span_rows);
}

// Strided 1x1 convolutions at odd sizes, rows that do not fill a tile, two images: the gathered
// input gives the reference's result.
TEST(ConvDirect, Strided1x1RunsOnGatheredPixels) {
  for (const ConvCase& cc :
       {ConvCase{2, 17, 9, 7, 33, 1, 2, 0, 1, true}, ConvCase{1, 40, 14, 14, 70, 1, 2, 0, 1, false},
        ConvCase{1, 8, 7, 10, 16, 1, 3, 0, 2, true}}) {
    for (int threads : {1, 2}) {
      EXPECT_LT(
          prepared_kernel_error(conv_graph(cc, "nhwc", false, true), "conv2d.direct_nhwc", threads),
          1e-4)
          << describe(cc) << " threads=" << threads;
    }
  }
}

TEST(ConvDirect, BadScheduleAttributeIsAUserError) {
  const KernelInfo* k = find_kernel(ir::OpKind::conv2d, "conv2d.direct_nhwc");
  ASSERT_NE(k, nullptr);
  for (const auto& [key, value] : std::vector<std::pair<std::string, ir::AttrValue>>{
           {"conv.vectors", int64_t{5}},
           {"conv.vectors", int64_t{-1}},
           {"conv.partition", std::string("m")},
           {"conv.channels_per_pass", int64_t{-1}}}) {
    ir::Graph g = conv_graph(conv_cases()[0], "nhwc", false, false);
    g.mutable_nodes()[0].attrs.set(key, value);
    try {
      cpu::conv2d_direct_plan(testing::step_for(g, *k), 2);
      ADD_FAILURE() << key << " accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("node conv"), std::string::npos) << e.what();
    }
  }
}

TEST(ConvDirect, RefusesNchw) {
  const ir::Graph g = conv_graph(conv_cases()[0], "nchw", false, false);
  const KernelInfo* k = find_kernel(ir::OpKind::conv2d, "conv2d.direct_nhwc");
  ASSERT_NE(k, nullptr);
  ASSERT_NE(k->supports, nullptr);
  EXPECT_FALSE(k->supports(testing::step_for(g, *k)));
}

TEST(ConvIm2col, MatchesReferenceInBothLayouts) {
  for (const ConvCase& cc : conv_cases()) {
    for (const char* layout : {"nchw", "nhwc"}) {
      EXPECT_LT(prepared_kernel_error(conv_graph(cc, layout, false, true), "conv2d.im2col", 2),
                1e-4)
          << describe(cc) << " " << layout;
    }
  }
}

TEST(ConvGemm1x1, MatchesReferenceInBothLayouts) {
  for (const ConvCase& cc :
       {ConvCase{1, 17, 1, 1, 33, 1, 1, 0, 1, true}, ConvCase{2, 7, 5, 9, 70, 1, 1, 0, 1, false},
        ConvCase{1, 12, 5, 6, 9, 1, 1, 0, 3, true}}) {
    for (const char* layout : {"nchw", "nhwc"}) {
      EXPECT_LT(prepared_kernel_error(conv_graph(cc, layout, false, true), "conv2d.gemm_1x1", 2),
                1e-4)
          << describe(cc) << " " << layout;
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime
