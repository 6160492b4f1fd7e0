// Knob reach (runtime::Step::reach): a step records the pass parameters its kernel consumed,
// where it consumed them; a parameter that only sets an attribute no kernel reads reaches nothing.
#include <gtest/gtest.h>

#include <algorithm>

#include "passes/cuvilpass.h"
#include "passes/pipeline.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/quantize.h"
#include "runtime/executor.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;

bool has(const std::vector<std::string>& reach, const std::string& knob) {
  return std::find(reach.begin(), reach.end(), knob) != reach.end();
}

Graph one_linear(int64_t m) {
  Graph g;
  const ir::ValueId x = g.add_input("x", {m, 64});
  const ir::ValueId w = testing::random_constant(g, "w", {96, 64}, 3);
  g.mark_output(g.add_node(ir::OpKind::linear, {x, w}, {}, "fc"));
  return g;
}

// The step after one run: lowering records selection and prepare, the first run the rest.
runtime::Step ran_step(const Graph& g, const std::string& kernel,
                       const PipelineConfig& config = default_pipeline("cpu")) {
  Compiled c = compile(g, config, 1);
  runtime::Executor executor(std::move(c.plan));
  executor.run(ir::random_inputs(g, 1));
  for (const runtime::Step& s : executor.plan().steps) {
    if (s.kernel == kernel) return s;
  }
  ADD_FAILURE() << "no " << kernel << " step";
  return {};
}

TEST(KnobReach, AttributesKeepTheirOriginAndReadsAreRecorded) {
  ir::Attrs a;
  a.set("gemm.mc", int64_t{96}, "gemm-tiling.mc");
  a.set("layout", std::string("nhwc"), "layout.memory_layout,layout.blocked_convs");
  a.set("groups", int64_t{1});
  EXPECT_EQ(a.origin("gemm.mc"), "gemm-tiling.mc");
  EXPECT_EQ(a.origin("groups"), "");
  ir::Attrs b;
  b.set("gemm.mc", int64_t{96});
  b.set("layout", std::string("nhwc"));
  b.set("groups", int64_t{1});
  EXPECT_EQ(a, b);  // provenance is not part of the value
  {
    ir::AttrReadRecorder reads;
    a.get_int("groups", 0);
    a.get_string("layout", "");
    EXPECT_EQ(reads.origins(),
              (std::set<std::string>{"layout.blocked_convs", "layout.memory_layout"}));
  }
  a.get_int("gemm.mc", 0);  // no recorder: nothing to record into
  a.set("gemm.mc", int64_t{8});
  EXPECT_EQ(a.origin("gemm.mc"), "");  // a plain set is not the parameter's value any more
}

TEST(KnobReach, FewRowLinearTakesNoGemmBlocking) {
  // m = 1 reads the weight in place (GEMV): the GEMM's cache blocks and tile reach nothing.
  const runtime::Step gemv = ran_step(one_linear(1), "linear.gemm");
  EXPECT_FALSE(has(gemv.reach, "gemm-tiling.mc"));
  EXPECT_FALSE(has(gemv.reach, "gemm-tiling.mr_nr"));
  EXPECT_FALSE(has(gemv.reach, "gemm-tiling.prepack_weights"));
  EXPECT_TRUE(has(gemv.reach, "select-lowering.linear"));
  const runtime::Step gemm = ran_step(one_linear(32), "linear.gemm");
  for (const char* knob :
       {"gemm-tiling.mc", "gemm-tiling.kc", "gemm-tiling.nc", "gemm-tiling.mr_nr",
        "gemm-tiling.prefetch_b", "gemm-tiling.prepack_weights", "threading.partition"}) {
    EXPECT_TRUE(has(gemm.reach, knob)) << knob;
  }
}

// Issue 18: one GEMM driver, so the split of C between threads is one knob for the fp32, bf16
// and int8 GEMMs alike (it reached the fp32 GEMM only).
TEST(KnobReach, ThreadingPartitionReachesEveryPrecision) {
  EXPECT_TRUE(has(ran_step(one_linear(32), "linear.gemm").reach, "threading.partition"));
  for (const char* dtype : {"bf16", "int8"}) {
    const std::string kernel = std::string("linear.") + dtype;
    // bf16: on VDPBF16PS or widened to fp32, on any AVX-512 CPU.
    const bool runs = std::string(dtype) == "bf16" ? runtime::cpu::cpu_has_avx512()
                                                   : runtime::cpu::cpu_has_avx512_vnni();
    if (!runs) continue;  // the node stays fp32 where the CPU lacks the instructions
    PipelineConfig config = default_pipeline("cpu");
    for (PassInvocation& p : config.passes) {
      if (p.name == "reduced-precision") p.params["linear_dtype"] = std::string(dtype);
    }
    const runtime::Step gemm = ran_step(one_linear(32), kernel, config);
    EXPECT_TRUE(has(gemm.reach, "threading.partition")) << kernel;
    EXPECT_TRUE(has(gemm.reach, std::string("gemm-tiling.") + dtype + "_mc")) << kernel;
    // Few rows stream the weights once: neither the split nor the panels reach them.
    const runtime::Step skinny = ran_step(one_linear(2), kernel, config);
    EXPECT_FALSE(has(skinny.reach, "threading.partition")) << kernel;
  }
}

TEST(KnobReach, PlanWideKnobsAndStructuralRewrites) {
  const Graph g = testing::tiny_resnet(1, 16, 16);
  Compiled c = compile(g, default_pipeline("cpu"), 1);
  const runtime::Plan& plan = c.plan;
  for (const char* knob :
       {"threading.threads", "threading.spin_us", "threading.runtime", "threading.balance",
        "memory-plan.strategy", "memory-plan.alignment", "python-binding.gil_check"}) {
    EXPECT_TRUE(has(plan.reach, knob)) << knob;
  }
  bool fused = false;
  for (const runtime::Step& s : plan.steps) {
    if (!s.epilogue.empty()) {
      fused = true;
      EXPECT_TRUE(has(s.reach, "fuse-elementwise.max_fusion_depth")) << s.node_name;
    }
  }
  EXPECT_TRUE(fused);
}

}  // namespace
}  // namespace cuvil::passes
