// conv2d.bf16's direct path for few input channels (runtime/cpu/conv_bf16_direct.h): which
// convolutions take it, and that it matches the fp64 reference within the bf16 bound.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/cpu/conv_bf16_direct.h"
#include "runtime/cpu/gemm_bf16.h"
#include "runtime/cpu/lowp_gemm_schedule.h"
#include "tests/runtime/conv_kernel_support.h"
#include "tests/runtime/conv_test_graphs.h"

namespace cuvil::runtime::cpu {
namespace {

using testing::ConvCase;

bool runs_direct(const ConvCase& cc) {
  return bf16_conv_runs_direct(cc.c, cc.k, cc.k, cc.stride, cc.stride);
}

// A stem (3 channels, 7x7, stride 2), one to 15 channels, output channels 1, 17, 70 (a block of
// 64 and a partial one) and 33, odd images, kernel rows of an odd element count (the pair at the
// end meets a zero weight), padding wider than the image, strided 1x1, several images; and
// stride x channels odd (every other window read from the shifted copy): 3 and 5 channels at
// stride 1, 1 channel at stride 3, 7 channels at stride 1 with one output pixel per row.
const ConvCase kDirectCases[] = {
    {1, 3, 17, 17, 64, 7, 2, 3, 1, true}, {2, 3, 9, 11, 17, 3, 2, 1, 1, false},
    {1, 2, 7, 7, 70, 3, 1, 1, 1, true},   {1, 1, 13, 13, 33, 5, 2, 2, 1, true},
    {1, 4, 5, 5, 1, 3, 1, 0, 1, false},   {3, 6, 1, 1, 8, 3, 1, 1, 1, true},
    {1, 3, 9, 9, 16, 1, 2, 0, 1, true},   {1, 5, 8, 6, 48, 9, 2, 4, 1, true},
    {1, 15, 7, 7, 20, 3, 2, 1, 1, false}, {1, 3, 32, 35, 130, 3, 2, 1, 1, true},
    {1, 3, 9, 11, 64, 3, 1, 1, 1, true},  {2, 5, 7, 6, 17, 5, 1, 2, 1, false},
    {1, 1, 13, 14, 40, 7, 3, 3, 1, true}, {1, 7, 5, 1, 9, 3, 1, 1, 1, true},
};

class Bf16DirectConvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "CPU lacks avx512_bf16";
  }
};

TEST(Bf16DirectConv, FewChannelsRunDirect) {
  for (const ConvCase& cc : kDirectCases) EXPECT_TRUE(runs_direct(cc)) << describe(cc);
}

TEST(Bf16DirectConv, OtherConvolutionsDoNot) {
  EXPECT_FALSE(bf16_conv_runs_direct(16, 3, 3, 1, 1));    // enough channels for the gather
  EXPECT_FALSE(bf16_conv_runs_direct(4, 1, 1, 1, 1));     // a 1x1 stride-1 product
  EXPECT_FALSE(bf16_conv_runs_direct(14, 11, 11, 2, 2));  // 77 pairs per kernel row
  EXPECT_FALSE(bf16_conv_runs_direct(0, 3, 3, 2, 2));
}

TEST_F(Bf16DirectConvTest, MatchesTheReferenceWithinTheBf16Bound) {
  for (const ConvCase& cc : kDirectCases) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(describe(cc) + " threads=" + std::to_string(threads));
      const ir::Graph g = testing::conv_graph(cc, "nhwc", false, false);
      EXPECT_LE(testing::prepared_kernel_error(g, "conv2d.bf16", threads), kBf16GemmTolerance);
    }
  }
}

// Weights that are not constants are packed per call; a residual add and ReLU fused.
TEST_F(Bf16DirectConvTest, WeightsAsInputsAndAFusedEpilogue) {
  for (const ConvCase& cc : {kDirectCases[0], kDirectCases[2], kDirectCases[7], kDirectCases[11]}) {
    SCOPED_TRACE(describe(cc));
    const ir::Graph g = testing::conv_graph(cc, "nhwc", true, true);
    EXPECT_LE(testing::prepared_kernel_error(g, "conv2d.bf16", 2), kBf16GemmTolerance);
  }
}

// Every lane epilogue (in registers) and one without a lane form (applied per output row) give
// the bits of the plain output finished by Epilogue::apply.
TEST_F(Bf16DirectConvTest, EpiloguesGiveTheBitsOfApplyAfterwards) {
  for (const ConvCase& cc : {kDirectCases[1], kDirectCases[2], kDirectCases[10]}) {
    SCOPED_TRACE(describe(cc));
    testing::expect_fused_epilogues_match_apply(testing::conv_graph(cc, "nhwc", false, false),
                                                "conv2d.bf16");
  }
}

// The path is chosen once, at scheduling: a CUVIL_CPU_DISABLE set between lowering and the run
// (which turns bf16_conv_runs_direct_here false) leaves the step on the direct path its
// prepared weights were packed for, rather than reading them as GEMM panels.
TEST_F(Bf16DirectConvTest, ThePathChosenAtLoweringHoldsAtRunTime) {
  const ConvCase& cc = kDirectCases[0];
  const ir::Graph g = testing::conv_graph(cc, "nhwc", false, false);
  const ir::Node& n = g.nodes().at(0);
  const KernelInfo* k = find_kernel(n.op, "conv2d.bf16");
  ASSERT_NE(k, nullptr);
  Step step = testing::step_for(g, *k);
  ASSERT_TRUE(scheduled_lowp(step).bf16_direct);
  const std::vector<ir::Tensor> inputs = ir::random_inputs(g, 5);
  std::vector<const float*> in = {inputs.at(0).data.data(), g.constant_data(n.inputs[1]).data()};
  const float* constants[] = {nullptr, in[1]};
  step.prepared = k->prepare(step, constants);
  setenv("CUVIL_CPU_DISABLE", "avx512_bf16", 1);
  std::vector<float> out(static_cast<size_t>(ir::num_elements(step.output_shape)));
  ThreadPool pool(2);
  k->fn({step, in.data(), out.data(), pool});
  unsetenv("CUVIL_CPU_DISABLE");
  const ir::Tensor want = reference::interpret(g, inputs).at(0);
  EXPECT_LE(ir::max_relative_error(ir::Tensor(step.output_shape, out), want), kBf16GemmTolerance);
}

}  // namespace
}  // namespace cuvil::runtime::cpu
