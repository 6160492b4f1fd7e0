// conv2d.depthwise_nhwc (AVX-512 and portable tiles) against the reference interpreter: channel
// counts around the 16-lane vectors, spatial sizes from 1 (all border) to 31, kernels 3, 5 and
// 7, strides 1 and 2, padding 0 .. 3 (up to windows wholly in the padding), batch 1 and 2, with
// and without bias, fused epilogues, 1 and 2 threads; channel multipliers above 1; grouped
// convolutions of 2, 4 and 8 channels per group; what supports() refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conv_kernel_support.h"
#include "conv_test_graphs.h"
#include "runtime/cpu/gemm_ukernel.h"
#include "tests/runtime/isa_sweep.h"

namespace cuvil::runtime {
namespace {

using testing::conv_graph;
using testing::ConvCase;
using testing::prepared_kernel_error;

constexpr const char* kKernel = "conv2d.depthwise_nhwc";
// fp32 sums of at most 49 products against the reference's fp64 ones.
constexpr double kBound = 1e-5;

ConvCase depthwise(int64_t n, int64_t c, int64_t hw, int64_t k, int64_t stride, int64_t pad,
                   bool bias, int64_t mult = 1) {
  return {n, c, hw, hw, c * mult, k, stride, pad, c, bias};
}

// `groups` groups of `width` channels in and out.
ConvCase grouped(int64_t n, int64_t groups, int64_t width, int64_t hw, int64_t k, int64_t stride,
                 int64_t pad, bool bias) {
  return {n, groups * width, hw, hw, groups * width, k, stride, pad, groups, bias};
}

bool has_output(const ConvCase& cc) {
  return cc.h + 2 * cc.pad >= cc.k && cc.w + 2 * cc.pad >= cc.k;
}

using testing::for_each_isa;

// Epilogues the tiles apply in registers (column, scalar and element operands; clip as in
// MobileNet's ReLU6, leaky ReLU, division) and two the driver applies to the rows, at channel
// counts with a vector tail (17, 70, 130: several tiles across the channels) and without (32),
// windows wholly in the padding included (1 x 1 input, pad 3), on every instruction set.
TEST(ConvDepthwise, EveryLaneEpilogueMatchesReference) {
  for_each_isa([] {
    for (const ConvCase& cc :
         {depthwise(1, 17, 9, 3, 1, 1, true), depthwise(2, 70, 7, 5, 2, 2, false),
          depthwise(1, 32, 1, 7, 1, 3, true), depthwise(1, 130, 5, 3, 1, 1, true),
          depthwise(1, 7, 5, 3, 1, 1, true, 2)}) {
      const ir::Graph plain = conv_graph(cc, "nhwc", false, false);
      const ir::Shape out = plain.value(plain.nodes().back().output).shape;
      for (const auto& steps : testing::lane_epilogue_cases(out)) {
        ir::Graph g = plain;
        testing::with_epilogue(g, steps);
        for (int threads : {1, 2}) {
          EXPECT_LT(prepared_kernel_error(g, kKernel, threads), kBound)
              << describe(cc) << " first step " << ir::to_string(steps[0].op)
              << " threads=" << threads;
        }
      }
    }
  });
}

// Every channel count x spatial size x kernel x stride x padding with an output; batch, bias,
// the fused relu + residual epilogue and the thread count cycle through all 16 combinations
// along the sweep (so few-row cases, where threads split channels, also meet each of them).
TEST(ConvDepthwise, MatchesReferenceOnOddShapes) {
  for_each_isa([] {
    int64_t index = 0;
    for (int64_t c : {1, 3, 7, 16, 17, 33, 130}) {
      for (int64_t hw : {1, 3, 7, 17, 31}) {
        for (int64_t k : {3, 5, 7}) {
          for (int64_t stride : {1, 2}) {
            for (int64_t pad : {0, 1, 2, 3}) {
              const int64_t v = index++;
              const ConvCase cc = depthwise(1 + (v & 1), c, hw, k, stride, pad, (v & 2) != 0);
              if (!has_output(cc)) continue;
              const bool epilogue = (v & 4) != 0;
              const int threads = 1 + static_cast<int>((v >> 3) & 1);
              EXPECT_LT(
                  prepared_kernel_error(conv_graph(cc, "nhwc", false, epilogue), kKernel, threads),
                  kBound)
                  << describe(cc) << " epilogue=" << epilogue << " threads=" << threads;
            }
          }
        }
      }
    }
  });
}

// MobileNet-like shapes with both thread counts, with and without the epilogue: wide rows (tiles
// of 14 interior pixels), short rows (channel groups of several vectors), many channels.
TEST(ConvDepthwise, MobileNetShapesWithEpilogueAndThreads) {
  const std::vector<ConvCase> cases = {
      depthwise(1, 32, 56, 3, 1, 1, true),  depthwise(2, 96, 28, 3, 2, 1, true),
      depthwise(1, 144, 14, 3, 1, 1, true), depthwise(1, 960, 7, 3, 1, 1, true),
      depthwise(1, 240, 14, 5, 2, 2, true), depthwise(1, 130, 9, 7, 1, 3, false),
  };
  for_each_isa([&] {
    for (const ConvCase& cc : cases) {
      for (bool epilogue : {false, true}) {
        for (int threads : {1, 2}) {
          EXPECT_LT(
              prepared_kernel_error(conv_graph(cc, "nhwc", false, epilogue), kKernel, threads),
              kBound)
              << describe(cc) << " epilogue=" << epilogue << " threads=" << threads;
        }
      }
    }
  });
}

// Dilated windows (DeepLab's and LRASPP's MobileNetV3 backbones): dilations 1 x 2 .. 4 x 4 at
// odd sizes, padding up to the dilated span, so windows whose taps straddle the borders in rows
// and columns, interior tiles and wholly padded windows all occur; multiplier 2 on the portable
// tile; the epilogue and both thread counts.
TEST(ConvDepthwise, DilatedMatchesReference) {
  struct Dilated {
    ConvCase conv;
    std::vector<int64_t> dilation;
  };
  const std::vector<Dilated> cases = {
      {depthwise(1, 17, 17, 3, 1, 2, true), {2, 2}},
      {depthwise(2, 33, 9, 3, 1, 3, false), {3, 1}},
      {depthwise(1, 16, 31, 5, 1, 4, true), {2, 2}},
      {depthwise(1, 7, 7, 3, 2, 4, true), {4, 4}},
      {depthwise(1, 130, 13, 3, 1, 1, true), {1, 2}},
      {depthwise(1, 3, 1, 3, 1, 3, true), {3, 3}},
      {depthwise(1, 5, 11, 3, 1, 2, true, 2), {2, 2}},
  };
  for_each_isa([&] {
    for (const Dilated& d : cases) {
      for (bool epilogue : {false, true}) {
        const ir::Graph g = conv_graph(d.conv, "nhwc", false, epilogue, d.dilation);
        for (int threads : {1, 2}) {
          EXPECT_LT(prepared_kernel_error(g, kKernel, threads), kBound)
              << describe(d.conv) << " dilation " << d.dilation[0] << "x" << d.dilation[1]
              << " epilogue=" << epilogue << " threads=" << threads;
        }
      }
    }
  });
}

TEST(ConvDepthwise, WeightsComputedAtRunTimeArePackedPerCall) {
  for (const ConvCase& cc :
       {depthwise(1, 17, 7, 3, 1, 1, true), depthwise(2, 33, 9, 5, 2, 2, false),
        depthwise(1, 130, 3, 7, 1, 3, true)}) {
    for (int threads : {1, 2}) {
      EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nhwc", true, true), kKernel, threads), kBound)
          << describe(cc) << " threads=" << threads;
    }
  }
}

// O = C x multiplier: output channel oc reads input channel oc / multiplier.
TEST(ConvDepthwise, ChannelMultiplierAboveOneMatchesReference) {
  const std::vector<ConvCase> cases = {
      depthwise(1, 3, 7, 3, 1, 1, true, 2),  depthwise(2, 5, 9, 3, 2, 1, false, 3),
      depthwise(1, 17, 6, 5, 1, 2, true, 2), depthwise(1, 8, 5, 3, 1, 1, true, 4),
      depthwise(1, 7, 11, 7, 2, 3, true, 5),
  };
  for_each_isa([&] {
    for (const ConvCase& cc : cases) {
      for (int threads : {1, 2}) {
        EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nhwc", false, true), kKernel, threads),
                  kBound)
            << describe(cc) << " threads=" << threads;
      }
    }
  });
}

// Narrow groups (2, 4, 8 channels per group in and out): group counts that leave a vector
// tail (3 x 2, 5 x 4, 3 x 8 channels) or fill whole vectors and several of them (8 x 2, 12 x 4,
// 9 x 8), spatial sizes from 1 (all border) to 17, kernels 1, 3 and 5, strides 1 and 2,
// padding 0 .. 2; batch, bias, the relu + residual epilogue and the thread count cycle along the
// sweep; every instruction set.
TEST(ConvDepthwise, NarrowGroupsMatchReferenceOnOddShapes) {
  struct Groups {
    int64_t width, groups;
  };
  const std::vector<Groups> counts = {{2, 3}, {2, 8}, {4, 5}, {4, 12}, {8, 3}, {8, 9}};
  for_each_isa([&] {
    int64_t index = 0;
    for (const Groups& gc : counts) {
      for (int64_t hw : {1, 3, 7, 17}) {
        for (int64_t k : {1, 3, 5}) {
          for (int64_t stride : {1, 2}) {
            for (int64_t pad : {0, 1, 2}) {
              const int64_t v = index++;
              const ConvCase cc =
                  grouped(1 + (v & 1), gc.groups, gc.width, hw, k, stride, pad, (v & 2) != 0);
              if (!has_output(cc)) continue;
              const bool epilogue = (v & 4) != 0;
              const int threads = 1 + static_cast<int>((v >> 3) & 1);
              EXPECT_LT(
                  prepared_kernel_error(conv_graph(cc, "nhwc", false, epilogue), kKernel, threads),
                  kBound)
                  << describe(cc) << " groups=" << gc.groups << " epilogue=" << epilogue
                  << " threads=" << threads;
            }
          }
        }
      }
    }
  });
}

// The narrow grouped tiles with every lane epilogue, a vector tail, dilation, and weights
// computed at run time (packed per call).
TEST(ConvDepthwise, NarrowGroupsWithEpiloguesDilationAndRunTimeWeights) {
  for_each_isa([] {
    for (const ConvCase& cc :
         {grouped(1, 5, 4, 9, 3, 1, 1, true), grouped(2, 3, 8, 7, 3, 2, 1, false),
          grouped(1, 9, 2, 6, 3, 1, 1, true)}) {
      const ir::Graph plain = conv_graph(cc, "nhwc", false, false);
      const ir::Shape out = plain.value(plain.nodes().back().output).shape;
      for (const auto& steps : testing::lane_epilogue_cases(out)) {
        ir::Graph g = plain;
        testing::with_epilogue(g, steps);
        EXPECT_LT(prepared_kernel_error(g, kKernel, 2), kBound)
            << describe(cc) << " first step " << ir::to_string(steps[0].op);
      }
      EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nhwc", false, true, {2, 2}), kKernel, 1),
                kBound)
          << describe(cc) << " dilation 2x2";
      EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nhwc", true, true), kKernel, 2), kBound)
          << describe(cc) << " weights at run time";
    }
  });
}

bool supports(const ConvCase& cc, const std::string& layout) {
  const ir::Graph g = conv_graph(cc, layout, false, false);
  const KernelInfo* k = find_kernel(ir::OpKind::conv2d, kKernel);
  EXPECT_NE(k, nullptr);
  EXPECT_NE(k->supports, nullptr);
  return k && k->supports && k->supports(testing::step_for(g, *k));
}

TEST(ConvDepthwise, SupportsDepthwiseAndNarrowGroupsNhwcOnly) {
  EXPECT_TRUE(supports(depthwise(1, 17, 7, 3, 1, 1, true), "nhwc"));
  EXPECT_TRUE(supports(depthwise(1, 5, 7, 3, 1, 1, true, 3), "nhwc"));
  EXPECT_TRUE(supports(depthwise(1, 1, 7, 3, 1, 1, true), "nhwc"));  // 1 -> 1 channel
  // groups 1: an ordinary convolution, also from one input channel to several.
  EXPECT_FALSE(supports({1, 8, 7, 7, 8, 3, 1, 1, 1, true}, "nhwc"));
  EXPECT_FALSE(supports({1, 1, 7, 7, 4, 3, 1, 1, 1, true}, "nhwc"));
  // Grouped, 2, 4 or 8 channels per group in and out: the narrow grouped tiles.
  EXPECT_TRUE(supports(grouped(1, 3, 4, 7, 3, 1, 1, true), "nhwc"));
  EXPECT_TRUE(supports(grouped(1, 5, 2, 7, 3, 1, 1, true), "nhwc"));
  EXPECT_TRUE(supports(grouped(1, 2, 8, 7, 1, 1, 0, true), "nhwc"));
  // Grouped otherwise: 16 channels per group, 3 (not a divisor of 16), or more out than in.
  EXPECT_FALSE(supports(grouped(1, 2, 16, 7, 3, 1, 1, true), "nhwc"));
  EXPECT_FALSE(supports(grouped(1, 4, 3, 7, 3, 1, 1, true), "nhwc"));
  EXPECT_FALSE(supports({1, 12, 7, 7, 6, 3, 1, 1, 6, true}, "nhwc"));
  EXPECT_FALSE(supports({1, 8, 7, 7, 16, 3, 1, 1, 2, true}, "nhwc"));
  EXPECT_FALSE(supports(grouped(1, 3, 4, 7, 3, 1, 1, true), "nchw"));
  // Depthwise, but NCHW activations.
  EXPECT_FALSE(supports(depthwise(1, 17, 7, 3, 1, 1, true), "nchw"));
}

}  // namespace
}  // namespace cuvil::runtime
