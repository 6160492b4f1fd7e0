// What a serving query is per suite, the MLPerf default targets, and the compiled pipeline as a
// SUT (scaled-down graphs, real clock; no timing is asserted).
#include <gtest/gtest.h>

#include "base/error.h"
#include "bench_suite/serve/compiled_sut.h"
#include "bench_suite/serve/scenarios.h"
#include "bench_suite/serve/workload.h"
#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"

namespace cuvil::bench::serve {
namespace {

Rung rung(const std::string& name, std::map<std::string, int64_t> params) {
  Rung r;
  r.name = name;
  r.params = std::move(params);
  return r;
}

TEST(QueryWorkload, LlamaPrefillRungIsPromptThenDecodeAtGrowingContext) {
  WorkloadOptions o;
  o.decode_tokens = 3;
  const QueryWorkload w = query_workload(find_suite("llama3-8b"),
                                         rung("prefill-128", {{"seq", 128}, {"layers", 1}}), o);
  ASSERT_EQ(w.stages.size(), 4u);
  EXPECT_EQ(w.first_output_stage, 0u);
  EXPECT_EQ(w.decode_tokens, 3);
  EXPECT_EQ(w.stages[0].rung.param("seq", 0), 128);
  EXPECT_EQ(w.stages[0].rung.param("past", -1), 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(w.stages[1 + i].rung.param("seq", 0), 1);
    EXPECT_EQ(w.stages[1 + i].rung.param("past", 0), 128 + i);
    EXPECT_EQ(w.stages[1 + i].rung.param("layers", 0), 1);
  }
}

TEST(QueryWorkload, LlamaDecodeRungPromptIsItsContext) {
  const QueryWorkload w = query_workload(
      find_suite("llama3-8b"),
      rung("decode-ctx512", {{"seq", 1}, {"past", 512}, {"layers", 2}, {"batch", 3}}), {});
  EXPECT_EQ(w.batch, 3);
  EXPECT_EQ(w.stages[0].rung.param("seq", 0), 512);
  EXPECT_EQ(w.stages.size(), 9u);  // default 8 decode tokens
  EXPECT_EQ(w.stages.back().rung.param("past", 0), 519);
}

TEST(QueryWorkload, SdxlRepeatsTheUnetStep) {
  WorkloadOptions o;
  o.unet_steps = 7;
  const QueryWorkload w = query_workload(find_suite("sdxl"), rung("256px", {{"image", 256}}), o);
  ASSERT_EQ(w.stages.size(), 1u);
  EXPECT_EQ(w.stages[0].repeat, 7);
  EXPECT_EQ(w.decode_tokens, 0);
}

TEST(QueryWorkload, RejectsBadOptions) {
  WorkloadOptions o;
  o.unet_steps = 0;
  EXPECT_THROW(query_workload(find_suite("sdxl"), rung("x", {}), o), UserError);
  o = WorkloadOptions{};
  o.decode_tokens = -1;
  EXPECT_THROW(query_workload(find_suite("llama3-8b"), rung("x", {}), o), UserError);
  EXPECT_THROW(query_workload(find_suite("resnet50"), rung("x", {{"batch", 0}}), {}), UserError);
}

TEST(DefaultTarget, FollowsMlperf) {
  EXPECT_EQ(default_target(find_suite("resnet50")).p99_ms, 15.0);
  EXPECT_EQ(default_target(find_suite("llama3-8b")).p99_ms, 2000.0);
  EXPECT_EQ(default_target(find_suite("llama3-8b")).tpot_p99_ms, 100.0);
  EXPECT_EQ(default_target(find_suite("sdxl")).p99_ms, 20000.0);
}

passes::PipelineConfig default_config(const Suite& suite) {
  return passes::load_cuvilpass(default_config_path(suite, "cpu"));
}

TEST(CompiledSut, TinyResnetServesSingleStream) {
  const Suite& suite = find_suite("resnet50");
  const QueryWorkload w = query_workload(suite, rung("b3", {{"batch", 3}}), {});
  CompiledSut sut(suite, w, default_config(suite), 1, 1, /*tiny=*/true);
  EXPECT_EQ(sut.max_batch(), 3);
  RealClock clock;
  const ScenarioResult r = run_single_stream(sut, clock, {3, 0.0, 1});
  EXPECT_EQ(r.queries, 3);
  EXPECT_GT(r.latency.p50_ms, 0);
}

TEST(CompiledSut, TinyLlamaFirstTokenPrecedesTheLast) {
  const Suite& suite = find_suite("llama3-8b");
  WorkloadOptions o;
  o.decode_tokens = 2;
  const QueryWorkload w = query_workload(suite, rung("prefill-7", {{"seq", 7}}), o);
  CompiledSut sut(suite, w, default_config(suite), 1, 1, /*tiny=*/true);
  RealClock clock;
  const int64_t start = clock.now_ns();
  const BatchTimes t = sut.process(1, clock);
  EXPECT_LE(start, t.first_output_ns);
  EXPECT_LE(t.first_output_ns, t.done_ns);
  EXPECT_EQ(sut.decode_tokens(), 2);
}

}  // namespace
}  // namespace cuvil::bench::serve
