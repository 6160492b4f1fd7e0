// conv2d.direct_nchw16c (AVX-512 and portable tiles) and blocked pooling against the reference
// interpreter, at channel counts that are not multiples of 16.
#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <string>
#include <vector>

#include "conv_kernel_support.h"
#include "conv_test_graphs.h"
#include "runtime/cpu/gemm_ukernel.h"
#include "tests/runtime/isa_sweep.h"

namespace cuvil::runtime {
namespace {

using testing::conv_cases;
using testing::conv_graph;
using testing::ConvCase;
using testing::prepared_kernel_error;

constexpr const char* kBlockedKernel = "conv2d.direct_nchw16c";

// conv_cases() without the grouped ones (nchw16c needs groups 1), plus channels 1 and 33.
std::vector<ConvCase> blocked_cases() {
  std::vector<ConvCase> out;
  for (const ConvCase& cc : conv_cases()) {
    if (cc.groups == 1) out.push_back(cc);
  }
  out.push_back({1, 1, 7, 5, 1, 3, 1, 1, 1, true});
  out.push_back({2, 33, 6, 3, 47, 3, 2, 1, 1, true});
  return out;
}

using testing::for_each_isa;

TEST(ConvNchw16c, MatchesReferenceOnOddShapes) {
  for_each_isa([] {
    for (const ConvCase& cc : blocked_cases()) {
      for (int threads : {1, 2}) {
        EXPECT_LT(
            prepared_kernel_error(conv_graph(cc, "nchw16c", false, false), kBlockedKernel, threads),
            1e-4)
            << describe(cc) << " threads=" << threads;
      }
    }
  });
}

TEST(ConvNchw16c, FusedReluAndResidualMatchReference) {
  for_each_isa([] {
    for (const ConvCase& cc : blocked_cases()) {
      EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nchw16c", false, true), kBlockedKernel, 2),
                1e-4)
          << describe(cc);
    }
  });
}

TEST(ConvNchw16c, WeightsComputedAtRunTimeArePackedPerCall) {
  for (const ConvCase& cc : blocked_cases()) {
    EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nchw16c", true, false), kBlockedKernel, 2),
              1e-4)
        << describe(cc);
  }
}

TEST(ConvNchw16c, AutoRunsBlockedConvolutions) {
  for (const ConvCase& cc : blocked_cases()) {
    EXPECT_LT(prepared_kernel_error(conv_graph(cc, "nchw16c", false, true), "conv2d.auto", 2), 1e-4)
        << describe(cc);
  }
}

// Input lanes past C may hold anything (NaN here): the kernel never reads them, and output
// lanes past O are exactly 0 (bias included) when there is no epilogue.
TEST(ConvNchw16c, PaddingLanesAreNeverReadAndWrittenAsZero) {
  const ConvCase cc{1, 7, 5, 6, 17, 3, 1, 1, 1, true};
  const ir::Graph g = conv_graph(cc, "nchw16c", false, false);
  std::vector<ir::Tensor> inputs = ir::random_inputs(g, 3);
  const std::vector<ir::Tensor> want = reference::interpret(g, inputs);
  for (size_t i = 0; i < inputs[0].data.size(); ++i) {
    if (i % 16 >= 7) inputs[0].data[i] = std::numeric_limits<float>::quiet_NaN();
  }
  const KernelInfo* k = find_kernel(ir::OpKind::conv2d, kBlockedKernel);
  ASSERT_NE(k, nullptr);
  Step step = testing::step_for(g, *k);
  std::vector<const float*> in = {inputs[0].data.data(),
                                  g.constant_data(g.nodes()[0].inputs[1]).data(),
                                  g.constant_data(g.nodes()[0].inputs[2]).data()};
  std::vector<const float*> constants = {nullptr, in[1], in[2]};
  step.prepared = k->prepare(step, constants.data());
  std::vector<float> out(static_cast<size_t>(ir::num_elements(step.output_shape)), -7.0f);
  ThreadPool pool(2);
  k->fn({step, in.data(), out.data(), pool});
  EXPECT_LT(ir::max_relative_error(ir::Tensor(step.output_shape, out), want[0]), 1e-4);
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t channel = (i / (16 * 5 * 6)) * 16 + i % 16;
    if (channel >= 17) {
      ASSERT_EQ(out[i], 0.0f) << "padding lane " << i;
    }
  }
}

TEST(ConvNchw16c, RefusesOtherLayoutsAndGroups) {
  const KernelInfo* k = find_kernel(ir::OpKind::conv2d, kBlockedKernel);
  ASSERT_NE(k, nullptr);
  ASSERT_NE(k->supports, nullptr);
  for (const char* layout : {"nchw", "nhwc"}) {
    const ir::Graph g = conv_graph(conv_cases()[0], layout, false, false);
    EXPECT_FALSE(k->supports(testing::step_for(g, *k))) << layout;
  }
}

TEST(ConvNchw16c, UnblockedKernelsRefuseBlockedSteps) {
  const ir::Graph g = conv_graph(conv_cases()[2], "nchw16c", false, false);  // a 1x1
  for (const char* name :
       {"conv2d.im2col", "conv2d.gemm_1x1", "conv2d.direct_nhwc", "conv2d.onednn"}) {
    const KernelInfo* k = find_kernel(ir::OpKind::conv2d, name);
    ASSERT_NE(k, nullptr) << name;
    ASSERT_NE(k->supports, nullptr) << name;
    EXPECT_FALSE(k->supports(testing::step_for(g, *k))) << name;
  }
}

ir::Graph blocked_pool_graph(ir::OpKind op, int64_t blocks, int64_t h, int64_t w, int64_t k,
                             int64_t stride, int64_t pad) {
  using Ints = std::vector<int64_t>;
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", {2, blocks, h, w, 16});
  g.mark_output(g.add_node(op, {x},
                           {{"kernel", Ints{k, k}},
                            {"stride", Ints{stride, stride}},
                            {"pad", Ints{pad, pad}},
                            {"layout", std::string("nchw16c")}}));
  return g;
}

TEST(PoolNchw16c, MaxAndAveragePoolingMatchReference) {
  for (ir::OpKind op : {ir::OpKind::max_pool2d, ir::OpKind::avg_pool2d}) {
    for (const auto& [blocks, h, w, k, stride, pad] : std::vector<std::array<int64_t, 6>>{
             {1, 7, 5, 3, 2, 1}, {3, 1, 1, 1, 1, 0}, {2, 9, 9, 2, 2, 0}}) {
      const ir::Graph g = blocked_pool_graph(op, blocks, h, w, k, stride, pad);
      const std::string kernel = std::string(ir::to_string(op)) + ".cpu";
      EXPECT_LT(prepared_kernel_error(g, kernel, 2), 1e-5) << kernel << " h=" << h << " k=" << k;
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime
