// conv2d.direct_nhwc (and the split im2col / 1x1 kernels) against the reference interpreter.
#include <gtest/gtest.h>

#include "conv_kernel_support.h"
#include "conv_test_graphs.h"

namespace cuvil::runtime {
namespace {

using testing::conv_cases;
using testing::conv_graph;
using testing::ConvCase;
using testing::kernel_error;

std::string describe(const ConvCase& cc) {
  return "c=" + std::to_string(cc.c) + " h=" + std::to_string(cc.h) + " o=" + std::to_string(cc.o) +
         " k=" + std::to_string(cc.k) + " s=" + std::to_string(cc.stride) +
         " g=" + std::to_string(cc.groups);
}

TEST(ConvDirect, MatchesReferenceOnOddShapes) {
  for (const ConvCase& cc : conv_cases()) {
    for (int threads : {1, 2}) {
      EXPECT_LT(kernel_error(conv_graph(cc, "nhwc", false, false), "conv2d.direct_nhwc", threads),
                1e-4)
          << describe(cc) << " threads=" << threads;
    }
  }
}

TEST(ConvDirect, FusedReluAndResidualMatchReference) {
  for (const ConvCase& cc : conv_cases()) {
    EXPECT_LT(kernel_error(conv_graph(cc, "nhwc", false, true), "conv2d.direct_nhwc", 2), 1e-4)
        << describe(cc);
  }
}

TEST(ConvDirect, WeightsComputedAtRunTimeArePackedPerCall) {
  for (const ConvCase& cc : conv_cases()) {
    EXPECT_LT(kernel_error(conv_graph(cc, "nhwc", true, false), "conv2d.direct_nhwc", 2), 1e-4)
        << describe(cc);
  }
}

TEST(ConvDirect, ManyRowsSplitByRowsAndFewRowsByChannels) {
  // 40 output rows (split by rows) vs 3 rows x 130 channels (split by channel blocks).
  for (const ConvCase& cc : {ConvCase{1, 8, 40, 9, 20, 3, 1, 1, 1, true},
                             ConvCase{1, 9, 3, 11, 130, 3, 1, 1, 1, true}}) {
    EXPECT_LT(kernel_error(conv_graph(cc, "nhwc", false, true), "conv2d.direct_nhwc", 2), 1e-4)
        << describe(cc);
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
      EXPECT_LT(kernel_error(conv_graph(cc, layout, false, true), "conv2d.im2col", 2), 1e-4)
          << describe(cc) << " " << layout;
    }
  }
}

TEST(ConvGemm1x1, MatchesReferenceInBothLayouts) {
  for (const ConvCase& cc :
       {ConvCase{1, 17, 1, 1, 33, 1, 1, 0, 1, true}, ConvCase{2, 7, 5, 9, 70, 1, 1, 0, 1, false},
        ConvCase{1, 12, 5, 6, 9, 1, 1, 0, 3, true}}) {
    for (const char* layout : {"nchw", "nhwc"}) {
      EXPECT_LT(kernel_error(conv_graph(cc, layout, false, true), "conv2d.gemm_1x1", 2), 1e-4)
          << describe(cc) << " " << layout;
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime
