// gemm-tiling: its knobs land on GEMM nodes, reach the kernel (GEMM trace) and keep results equal
// to the reference interpreter for random knob values at odd shapes.
#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "passes/cuvilpass.h"
#include "passes/pipeline.h"
#include "passes/random_config.h"
#include "passes/registry.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/executor.h"
#include "runtime/reference/interpreter.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using runtime::cpu::GemmTrace;

// x[m, k] -> linear(w[n, k], b[n]) -> relu: one GEMM with a bias and an epilogue.
Graph one_linear(int64_t m, int64_t n, int64_t k) {
  Graph g;
  const ir::ValueId x = g.add_input("x", {m, k});
  const ir::ValueId w = testing::random_constant(g, "w", {n, k}, 3);
  const ir::ValueId b = testing::random_constant(g, "b", {n}, 4);
  const ir::ValueId y = g.add_node(ir::OpKind::linear, {x, w, b}, {}, "fc");
  g.mark_output(g.add_node(ir::OpKind::relu, {y}, {}, "act"));
  return g;
}

// Runs `config` compiled on `threads` and returns the worst error against the reference, with
// the GEMM trace of the run in *trace.
double run_traced(const Graph& graph, const PipelineConfig& config, int threads, GemmTrace* trace) {
  const auto inputs = ir::random_inputs(graph, 9);
  const auto want = runtime::reference::interpret(graph, inputs);
  Compiled compiled = compile(graph, config, threads);
  runtime::Executor executor(std::move(compiled.plan));
  runtime::cpu::set_gemm_tracing(true);
  const auto got = executor.run(inputs);
  *trace = runtime::cpu::last_gemm_trace();
  runtime::cpu::set_gemm_tracing(false);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, ir::max_relative_error(got[i], want[i]));
  }
  return worst;
}

PipelineConfig with_params(const std::string& pass, const ParamMap& params) {
  PipelineConfig config = default_pipeline("cpu");
  for (PassInvocation& p : config.passes) {
    if (p.name != pass) continue;
    for (const auto& [key, value] : params) p.params[key] = value;
  }
  return config;
}

// The pass tags the nodes whose kernels run a GEMM: linear and matmul, and conv2d (1x1-as-GEMM
// and im2col take its blocking); nothing else.
TEST(GemmTiling, SetsEveryKnobOnGemmAndConvNodesOnly) {
  for (Graph g : {testing::tiny_decoder(1, 5, 24), testing::tiny_resnet(1, 8, 8)}) {
    testing::run_pass(g, "gemm-tiling", {{"mc", int64_t{48}}, {"mr_nr", std::string("8x32")}});
    int gemm_nodes = 0;
    for (const ir::Node& n : g.nodes()) {
      const bool gemm =
          n.op == ir::OpKind::linear || n.op == ir::OpKind::matmul || n.op == ir::OpKind::conv2d;
      EXPECT_EQ(n.attrs.has("gemm.mc"), gemm) << n.name;
      if (!gemm) continue;
      ++gemm_nodes;
      EXPECT_EQ(n.attrs.get_int("gemm.mc", 0), 48);
      EXPECT_EQ(n.attrs.get_string("gemm.mr_nr", ""), "8x32");
      EXPECT_TRUE(n.attrs.has("gemm.kc"));
      EXPECT_TRUE(n.attrs.has("gemm.nc"));
      EXPECT_EQ(n.attrs.get_int("gemm.prepack", -1), 1);
    }
    EXPECT_GT(gemm_nodes, 0);
  }
  EXPECT_GT(testing::count_ops(testing::tiny_resnet(1, 8, 8), ir::OpKind::conv2d), 0);
}

// A 1x1 convolution lowered as one GEMM runs that GEMM with gemm-tiling's blocking.
TEST(GemmTiling, AOneByOneConvolutionsGemmTakesTheBlocking) {
  Graph g;
  const ir::ValueId x = g.add_input("x", {1, 48, 12, 12});  // K = 48 input channels > kc
  g.mark_output(testing::add_conv(g, x, 48, 40, 1, 1, /*bias=*/true, 5));
  PipelineConfig config = with_params("gemm-tiling", {{"kc", int64_t{17}}});
  for (PassInvocation& p : config.passes) {
    if (p.name == "select-lowering") p.params["conv_1x1"] = std::string("gemm");
  }
  const Compiled compiled = compile(g, config, 1);
  int convs = 0;
  for (const runtime::Step& s : compiled.plan.steps) {
    if (s.kernel.rfind("conv2d.", 0) != 0) continue;
    ++convs;
    EXPECT_EQ(s.kernel, "conv2d.gemm_1x1");
  }
  EXPECT_EQ(convs, 1);
  GemmTrace t;
  ASSERT_LT(run_traced(g, config, 1, &t), 1e-4);
  EXPECT_GE(t.calls, 1);
  EXPECT_EQ(t.kc, 17);
}

TEST(GemmTiling, EveryKnobReachesTheKernel) {
  const Graph g = one_linear(37, 71, 53);
  GemmTrace t;
  const PipelineConfig config = with_params("gemm-tiling", {{"mr_nr", std::string("6x64")},
                                                            {"mc", int64_t{13}},
                                                            {"kc", int64_t{17}},
                                                            {"nc", int64_t{65}},
                                                            {"prepack_weights", false}});
  ASSERT_LT(run_traced(g, config, 1, &t), 1e-4);
  EXPECT_GE(t.calls, 1);
  if (t.isa != runtime::cpu::GemmIsa::avx2) {  // AVX2 has its own tile
    EXPECT_EQ(t.mr, 6);
    EXPECT_EQ(t.nr, 64);
    EXPECT_EQ(t.mc, 18);   // 13 rounded up to MR
    EXPECT_EQ(t.nc, 128);  // 65 rounded up to NR
  }
  EXPECT_EQ(t.kc, 17);
  EXPECT_FALSE(t.used_prepacked);
}

TEST(GemmTiling, PrepackedWeightsArePackedAtLoweringAndUsed) {
  const Graph g = one_linear(29, 45, 31);
  const PipelineConfig config =
      with_params("gemm-tiling", {{"prepack_weights", true}, {"kc", int64_t{16}}});
  const Compiled compiled = compile(g, config, 1);
  ASSERT_EQ(compiled.plan.steps.size(), 1u);
  EXPECT_NE(compiled.plan.steps[0].prepared, nullptr);
  GemmTrace t;
  ASSERT_LT(run_traced(g, config, 2, &t), 1e-4);
  EXPECT_TRUE(t.used_prepacked);
  EXPECT_EQ(t.kc, 16);
}

// A weight of kParallelPrepareElements or more is packed at lowering on all hardware threads;
// the packed form is the same, so the product still matches the reference (odd n and k).
TEST(GemmTiling, LargeWeightsPackedOnAllThreadsMatchTheReference) {
  const Graph g = one_linear(9, 1027, 1031);
  ASSERT_GE(1027 * 1031, runtime::cpu::kParallelPrepareElements);
  const PipelineConfig config = with_params("gemm-tiling", {{"kc", int64_t{100}}});
  GemmTrace t;
  EXPECT_LT(run_traced(g, config, 2, &t), 1e-4);
  EXPECT_TRUE(t.used_prepacked);
}

// The bf16/int8 panel knobs are checked against their registered ranges like every knob.
TEST(GemmTiling, ReducedPrecisionPanelsOutsideTheirRangeAreUserErrors) {
  Graph g = one_linear(9, 16, 16);
  for (const char* knob : {"bf16_mc", "bf16_kc", "bf16_nc", "int8_mc"}) {
    Graph copy = g;
    EXPECT_THROW(run_pipeline(copy, with_params("gemm-tiling", {{knob, int64_t{1}}})), UserError)
        << knob;
    Graph again = g;
    EXPECT_THROW(run_pipeline(again, with_params("gemm-tiling", {{knob, int64_t{1} << 20}})),
                 UserError)
        << knob;
  }
}

TEST(GemmTiling, FewRowProductsReadWeightsInPlace) {
  const Graph g = one_linear(3, 45, 31);
  const PipelineConfig config = with_params("gemm-tiling", {{"prepack_weights", true}});
  const Compiled compiled = compile(g, config, 1);
  EXPECT_EQ(compiled.plan.steps[0].prepared, nullptr);
  GemmTrace t;
  ASSERT_LT(run_traced(g, config, 2, &t), 1e-4);
  EXPECT_TRUE(t.few_rows);
  EXPECT_FALSE(t.used_prepacked);
}

TEST(GemmTiling, RandomKnobValuesMatchTheReferenceAtOddShapes) {
  const Pass* pass = find_pass("gemm-tiling");
  ASSERT_NE(pass, nullptr);
  std::mt19937 rng(2024);
  const int64_t sizes[] = {1, 5, 13, 33, 70};
  for (int trial = 0; trial < 12; ++trial) {
    const ParamMap params = random_params(*pass, static_cast<uint64_t>(trial));
    const int64_t m = sizes[rng() % 5], n = sizes[rng() % 5] + 2, k = sizes[rng() % 5];
    const int threads = 1 + static_cast<int>(rng() % 3);
    GemmTrace t;
    SCOPED_TRACE("trial " + std::to_string(trial) + " m=" + std::to_string(m) +
                 " n=" + std::to_string(n) + " k=" + std::to_string(k));
    EXPECT_LT(run_traced(one_linear(m, n, k), with_params("gemm-tiling", params), threads, &t),
              1e-4);
    EXPECT_LT(run_traced(testing::tiny_decoder(1, static_cast<int64_t>(3 + trial), 24),
                         with_params("gemm-tiling", params), threads, &t),
              1e-4);
  }
}

TEST(GemmTiling, OutOfRangeBlocksAreRejected) {
  const std::string text =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: gemm-tiling\n"
      "    params: { mc: 0 }\n";
  EXPECT_THROW(parse_cuvilpass(text, "bad.cuvilpass"), UserError);
  const std::string tile =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: gemm-tiling\n"
      "    params: { mr_nr: 3x3 }\n";
  EXPECT_THROW(parse_cuvilpass(tile, "bad.cuvilpass"), UserError);
}

}  // namespace
}  // namespace cuvil::passes
