// threading: the thread count reaches Plan::threads, the partition reaches the GEMM, and every
// partition keeps results equal to the reference interpreter.
#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/cuvilpass.h"
#include "passes/pipeline.h"
#include "runtime/cpu/gemm.h"
#include "runtime/executor.h"
#include "runtime/reference/interpreter.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;

PipelineConfig threading(int64_t threads, const std::string& partition) {
  PipelineConfig config = default_pipeline("cpu");
  for (PassInvocation& p : config.passes) {
    if (p.name != "threading") continue;
    p.params["threads"] = threads;
    p.params["partition"] = partition;
  }
  return config;
}

Graph linear_without_bias(int64_t m, int64_t n, int64_t k) {
  Graph g;
  const ir::ValueId x = g.add_input("x", {m, k});
  const ir::ValueId w = testing::random_constant(g, "w", {n, k}, 3);
  g.mark_output(g.add_node(ir::OpKind::linear, {x, w}, {}, "fc"));
  return g;
}

TEST(Threading, ThreadsParamSetsThePlanThreads) {
  const Graph g = testing::tiny_decoder(1, 5, 24);
  EXPECT_EQ(compile(g, threading(3, "auto"), 1).plan.threads, 3);
  EXPECT_EQ(compile(g, threading(0, "auto"), 2).plan.threads, 2);  // 0: the caller's count
}

TEST(Threading, SpinTimeReachesThePlan) {
  const Graph g = testing::tiny_decoder(1, 5, 24);
  PipelineConfig config = threading(2, "auto");
  EXPECT_EQ(compile(g, config, 1).plan.spin_us, 50);  // the registry default
  for (PassInvocation& p : config.passes) {
    if (p.name == "threading") p.params["spin_us"] = int64_t{0};
  }
  const Compiled compiled = compile(g, config, 1);
  EXPECT_EQ(compiled.plan.spin_us, 0);
  // No spinning at all: workers sleep between loops and still give the reference's result.
  const auto inputs = ir::random_inputs(g, 4);
  const auto want = runtime::reference::interpret(g, inputs);
  runtime::Executor executor(compiled.plan);
  for (int rep = 0; rep < 3; ++rep) {
    EXPECT_LT(ir::max_relative_error(executor.run(inputs)[0], want[0]), 1e-4);
  }
}

TEST(Threading, MeasuredBalanceIsTheDefaultAndKeepsResultsBitForBit) {
  const Graph g = testing::tiny_resnet(1, 32, 28);
  PipelineConfig config = threading(2, "auto");
  const Compiled measured = compile(g, config, 1);
  EXPECT_EQ(measured.plan.loop_balance, runtime::LoopBalance::measured);  // the registry default
  for (PassInvocation& p : config.passes) {
    if (p.name == "threading") p.params["balance"] = std::string("equal");
  }
  EXPECT_EQ(compile(g, config, 1).plan.loop_balance, runtime::LoopBalance::equal);
  // A pipeline without the threading pass (O0, O1) keeps the pass's default too.
  PipelineConfig without = default_pipeline("cpu");
  std::erase_if(without.passes, [](const PassInvocation& p) { return p.name == "threading"; });
  EXPECT_EQ(compile(g, without, 1).plan.loop_balance, runtime::LoopBalance::measured);
  // Moving cuts move whole rows, tiles or columns between threads, never split a sum: every
  // run gives the first run's result exactly, wherever this machine's timing moved the cuts
  // (GemmSplit.MovedStripsCoverCOnceAndKeepTheBits forces a move).
  const auto inputs = ir::random_inputs(g, 7);
  const auto want = runtime::reference::interpret(g, inputs);
  runtime::Executor executor(measured.plan);
  const auto first = executor.run(inputs);
  EXPECT_LT(ir::max_relative_error(first[0], want[0]), 1e-4);
  for (int rep = 0; rep < 20; ++rep) {
    ASSERT_EQ(executor.run(inputs)[0].data, first[0].data) << "run " << rep;
  }
}

PipelineConfig with_runtime(const std::string& runtime, const std::string& linear_lowering) {
  PipelineConfig config = threading(2, "auto");
  for (PassInvocation& p : config.passes) {
    if (p.name == "threading") p.params["runtime"] = runtime;
    if (p.name == "select-lowering") p.params["linear"] = linear_lowering;
  }
  return config;
}

TEST(Threading, RuntimeAutoIsOpenmpExactlyWhenAStepCallsOnednn) {
  const Graph g = testing::tiny_decoder(1, 5, 24);
  using runtime::ThreadRuntime;
  EXPECT_EQ(compile(g, with_runtime("auto", "gemm"), 1).plan.thread_runtime, ThreadRuntime::pool);
  EXPECT_EQ(compile(g, with_runtime("auto", "onednn"), 1).plan.thread_runtime,
            ThreadRuntime::openmp);
  EXPECT_EQ(compile(g, with_runtime("pool", "onednn"), 1).plan.thread_runtime, ThreadRuntime::pool);
  EXPECT_EQ(compile(g, with_runtime("openmp", "gemm"), 1).plan.thread_runtime,
            ThreadRuntime::openmp);
}

TEST(Threading, OpenmpRuntimeMatchesTheReference) {
  const Graph g = testing::tiny_decoder(1, 5, 24);
  const auto inputs = ir::random_inputs(g, 6);
  const auto want = runtime::reference::interpret(g, inputs);
  for (const char* lowering : {"gemm", "onednn"}) {
    runtime::Executor executor(compile(g, with_runtime("openmp", lowering), 1).plan);
    for (int rep = 0; rep < 2; ++rep) {
      EXPECT_LT(ir::max_relative_error(executor.run(inputs)[0], want[0]), 1e-4) << lowering;
    }
  }
}

TEST(Threading, PartitionReachesTheGemm) {
  const Graph g = linear_without_bias(97, 131, 29);
  const auto inputs = ir::random_inputs(g, 3);
  const auto want = runtime::reference::interpret(g, inputs);
  for (const char* partition : {"auto", "m", "n", "2d"}) {
    runtime::Executor executor(compile(g, threading(2, partition), 1).plan);
    runtime::cpu::set_gemm_tracing(true);
    const auto got = executor.run(inputs);
    const runtime::cpu::GemmTrace t = runtime::cpu::last_gemm_trace();
    runtime::cpu::set_gemm_tracing(false);
    EXPECT_LT(ir::max_relative_error(got[0], want[0]), 1e-4) << partition;
    EXPECT_EQ(t.parts, 2) << partition;
    if (std::string(partition) == "m") {
      EXPECT_EQ(t.partition, runtime::cpu::GemmPartition::m);
    }
    if (std::string(partition) == "n") {
      EXPECT_EQ(t.partition, runtime::cpu::GemmPartition::n);
    }
  }
}

TEST(Threading, EveryPartitionAndThreadCountMatchesTheReference) {
  const Graph g = testing::tiny_decoder(2, 7, 24);
  const auto inputs = ir::random_inputs(g, 5);
  const auto want = runtime::reference::interpret(g, inputs);
  for (const char* partition : {"auto", "m", "n", "2d"}) {
    for (int64_t threads : {1, 2, 3}) {
      runtime::Executor executor(compile(g, threading(threads, partition), 1).plan);
      const auto got = executor.run(inputs);
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_LT(ir::max_relative_error(got[i], want[i]), 1e-4) << partition << " " << threads;
      }
    }
  }
}

TEST(Threading, UnknownPartitionOrBalanceAndNegativeThreadsAreRejected) {
  const std::string partition =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: threading\n"
      "    params: { partition: diagonal }\n";
  EXPECT_THROW(parse_cuvilpass(partition, "bad.cuvilpass"), UserError);
  const std::string threads =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: threading\n"
      "    params: { threads: -1 }\n";
  EXPECT_THROW(parse_cuvilpass(threads, "bad.cuvilpass"), UserError);
  const std::string balance =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: threading\n"
      "    params: { balance: dynamic }\n";
  EXPECT_THROW(parse_cuvilpass(balance, "bad.cuvilpass"), UserError);
}

}  // namespace
}  // namespace cuvil::passes
