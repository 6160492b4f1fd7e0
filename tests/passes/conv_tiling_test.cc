// conv-tiling: its knobs land on conv2d nodes only, reach the direct and Winograd kernels' plans,
// and keep a small ResNet equal to the reference interpreter for random knob values at odd sizes.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "passes/cuvilpass.h"
#include "passes/pipeline.h"
#include "passes/random_config.h"
#include "passes/registry.h"
#include "runtime/cpu/conv_kernels.h"
#include "runtime/executor.h"
#include "runtime/reference/interpreter.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;

PipelineConfig with_conv_tiling(const ParamMap& params) {
  PipelineConfig config = default_pipeline("cpu");
  for (PassInvocation& p : config.passes) {
    if (p.name != "conv-tiling") continue;
    for (const auto& [key, value] : params) p.params[key] = value;
  }
  return config;
}

TEST(ConvTiling, SetsEveryKnobOnConvNodesOnly) {
  Graph g = testing::tiny_resnet(1, 8, 9);
  testing::run_pass(g, "conv-tiling",
                    {{"vectors", int64_t{3}},
                     {"partition", std::string("channels")},
                     {"channels_per_pass", int64_t{32}},
                     {"prefetch_weights", false},
                     {"winograd_tile", std::string("2x2")},
                     {"winograd_block_kib", int64_t{64}}});
  int convs = 0;
  for (const ir::Node& n : g.nodes()) {
    const bool conv = n.op == ir::OpKind::conv2d;
    EXPECT_EQ(n.attrs.has("conv.vectors"), conv) << n.name;
    if (!conv) continue;
    ++convs;
    EXPECT_EQ(n.attrs.get_int("conv.vectors", 0), 3);
    EXPECT_EQ(n.attrs.get_string("conv.partition", ""), "channels");
    EXPECT_EQ(n.attrs.get_int("conv.channels_per_pass", 0), 32);
    EXPECT_EQ(n.attrs.get_int("conv.prefetch_weights", -1), 0);
    EXPECT_EQ(n.attrs.get_int("conv.winograd_tile", -1), 2);
    EXPECT_EQ(n.attrs.get_int("conv.winograd_block_kib", -1), 64);
  }
  EXPECT_GT(convs, 0);
}

TEST(ConvTiling, KnobsReachTheDirectKernelsPlan) {
  const Graph g = testing::tiny_resnet(1, 40, 9);
  const Compiled compiled = compile(g,
                                    with_conv_tiling({{"vectors", int64_t{4}},
                                                      {"partition", std::string("channels")},
                                                      {"channels_per_pass", int64_t{20}}}),
                                    2);
  int direct = 0;
  for (const runtime::Step& s : compiled.plan.steps) {
    if (s.kernel != "conv2d.direct_nhwc") continue;
    ++direct;
    const runtime::cpu::DirectConvPlan p = runtime::cpu::conv2d_direct_plan(s, 2);
    const int64_t out_channels = s.input_shapes[1][0];
    EXPECT_EQ(p.vectors, std::min<int64_t>(4, (out_channels + 15) / 16)) << s.node_name;
    EXPECT_EQ(p.thread_parts, std::min<int64_t>(2, (out_channels + 63) / 64)) << s.node_name;
    EXPECT_EQ(p.channels_per_pass, std::min<int64_t>(16, s.input_shapes[1][1])) << s.node_name;
  }
  EXPECT_GT(direct, 0);
}

TEST(ConvTiling, KnobsReachTheWinogradKernelsPlan) {
  const Graph g = testing::tiny_resnet(1, 40, 9);
  int winograd = 0;
  for (const char* tile : {"2x2", "4x4"}) {
    passes::PipelineConfig config = with_conv_tiling({{"winograd_tile", std::string(tile)},
                                                      {"vectors", int64_t{2}},
                                                      {"partition", std::string("rows")}});
    // The tiny graph's convs have few tiles: keep them on Winograd.
    for (passes::PassInvocation& p : config.passes) {
      if (p.name == "select-lowering") p.params["winograd_min_tiles"] = int64_t{0};
    }
    const Compiled compiled = compile(g, config, 2);
    for (const runtime::Step& s : compiled.plan.steps) {
      if (s.kernel != "conv2d.winograd_nhwc") continue;
      ++winograd;
      const runtime::cpu::WinogradConvPlan p = runtime::cpu::conv2d_winograd_plan(s, 2);
      EXPECT_EQ(p.tile, std::string(tile) == "2x2" ? 2 : 4) << s.node_name;
      EXPECT_EQ(p.vectors, std::min<int64_t>(2, (s.input_shapes[1][0] + 15) / 16)) << s.node_name;
      EXPECT_EQ(p.thread_parts, 1) << s.node_name;
    }
  }
  EXPECT_GT(winograd, 0);
}

TEST(ConvTiling, RandomKnobValuesMatchTheReferenceAtOddSizes) {
  const Pass* pass = find_pass("conv-tiling");
  ASSERT_NE(pass, nullptr);
  std::mt19937 rng(77);
  const int64_t channels[] = {3, 7, 17, 40};
  const int64_t spatial[] = {1, 3, 7, 9};
  for (int trial = 0; trial < 8; ++trial) {
    const ParamMap params = random_params(*pass, static_cast<uint64_t>(trial));
    const Graph g = testing::tiny_resnet(1 + static_cast<int64_t>(rng() % 2), channels[rng() % 4],
                                         spatial[rng() % 4]);
    const auto inputs = ir::random_inputs(g, 11);
    const auto want = runtime::reference::interpret(g, inputs);
    runtime::Executor executor(compile(g, with_conv_tiling(params), 2).plan);
    const auto got = executor.run(inputs);
    EXPECT_LT(ir::max_relative_error(got[0], want[0]), 1e-4) << "trial " << trial;
  }
}

}  // namespace
}  // namespace cuvil::passes
