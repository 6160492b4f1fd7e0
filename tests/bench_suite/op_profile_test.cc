#include "bench_suite/op_profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "base/error.h"
#include "bench_suite/json_report.h"
#include "bench_suite/probe_run.h"
#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "passes/pipeline.h"
#include "probes/clock.h"
#include "runtime/executor.h"
#include "stats/summary.h"

namespace cuvil::bench {
namespace {

// The tiny ResNet-50 (same topology, small dimensions) compiled with the default pipeline.
struct Compiled {
  std::unique_ptr<runtime::Executor> executor;
  std::vector<ir::Tensor> inputs;
};
Compiled tiny_resnet() {
  const Suite& suite = find_suite("resnet50");
  const Rung rung = select_rungs(load_suite_ladder(suite), "b1").at(0);
  ir::Graph graph = suite.build(rung, /*tiny=*/true);
  Compiled c;
  c.inputs = ir::random_inputs(graph, 1);
  c.executor = std::make_unique<runtime::Executor>(
      passes::compile(std::move(graph), passes::default_pipeline("cpu"), 1).plan);
  return c;
}

RungResult result_with(const RungProbes& probes, double measured_ns) {
  RungResult r;
  r.suite = "resnet50";
  r.rung = "b1";
  r.measurement.real_ns = {measured_ns};
  r.peak.fp32_gflops = 100;
  r.peak.mem_read_gbps = 10;
  r.probes = probes;
  return r;
}

TEST(OpProfiler, RecordsEveryStepOfEveryRun) {
  Compiled c = tiny_resnet();
  const size_t steps = c.executor->plan().steps.size();
  OpProfiler profiler(steps);
  c.executor->set_observer(&profiler);
  for (int i = 0; i < 3; ++i) c.executor->run(c.inputs);
  c.executor->set_observer(nullptr);
  EXPECT_EQ(profiler.iterations(), 3);
  for (size_t i = 0; i < steps; ++i) {
    ASSERT_EQ(profiler.step_ns(i).size(), 3u) << i;
    for (double ns : profiler.step_ns(i)) EXPECT_GT(ns, 0) << i;  // every step does some work
  }
}

// A step that sleeps is measured at least its sleep (1% slack for the region clock's
// calibration and the sleep's NTP-slewed clock); an empty step right after it, less.
TEST(OpProfiler, AStepsTimeIsTheTimeBetweenItsBeginAndEnd) {
  constexpr int64_t kSleepNs = 20'000'000;
  OpProfiler profiler(2);
  profiler.on_run_begin();
  profiler.on_step_begin(0);
  std::this_thread::sleep_for(std::chrono::nanoseconds(kSleepNs));
  profiler.on_step_end(0);
  profiler.on_step_begin(1);
  profiler.on_step_end(1);
  profiler.on_run_end();
  ASSERT_EQ(profiler.iterations(), 1);
  EXPECT_GE(profiler.step_ns(0)[0], 0.99 * kSleepNs);
  EXPECT_LT(profiler.step_ns(1)[0], profiler.step_ns(0)[0]);
}

TEST(OpProfiler, ARunWithoutItsEndIsNotCounted) {
  OpProfiler profiler(2);
  profiler.on_run_begin();
  profiler.on_step_begin(0);
  profiler.on_step_end(0);
  profiler.on_run_end();  // step 1 never ran
  EXPECT_EQ(profiler.iterations(), 0);
  EXPECT_TRUE(profiler.step_ns(0).empty());
}

TEST(OpProfilerDeathTest, StepsOutOfOrderAreAnInternalError) {
  OpProfiler profiler(3);
  profiler.on_run_begin();
  EXPECT_DEATH(profiler.on_step_begin(1), "out of order");
}

TEST(OpProfiler, CounterDeltasPerStep) {
  // A fake counter that moves by 5 (raw), 10 ns enabled and 5 ns running per read.
  uint64_t reads = 0;
  OpProfiler profiler(3, [&reads](std::vector<CounterSnapshot>& out) {
    ++reads;
    out.assign(1, {5 * reads, 10 * reads, 5 * reads});
  });
  ASSERT_EQ(profiler.counter_count(), 1u);
  for (int run = 0; run < 2; ++run) {
    profiler.on_run_begin();
    for (size_t i = 0; i < 3; ++i) {
      profiler.on_step_begin(i);
      profiler.on_step_end(i);
    }
    profiler.on_run_end();
  }
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(profiler.counter_delta(i, 0).raw, 10u);  // 5 per run, 2 runs
    const CounterValue v = counter_value({"x", true, ""}, profiler.counter_delta(i, 0), 2);
    EXPECT_DOUBLE_EQ(v.raw, 5);
    EXPECT_DOUBLE_EQ(v.scale, 2);  // enabled twice as long as running: multiplexed
    EXPECT_DOUBLE_EQ(v.value, 10);
  }
}

TEST(CounterValue, UnsupportedHasNoValue) {
  const CounterValue v = counter_value({"cycles", false, "no PMU"}, {100, 10, 10}, 1);
  EXPECT_FALSE(v.supported);
  EXPECT_EQ(v.reason, "no PMU");
  EXPECT_EQ(v.value, 0);
  const nlohmann::json j = counters_json({v});
  EXPECT_FALSE(j["cycles"]["supported"].get<bool>());
  EXPECT_FALSE(j["cycles"].contains("value"));
}

TEST(OpsProfile, JsonRecordsCoverEveryStepOnceInOrder) {
  Compiled c = tiny_resnet();
  const runtime::Plan& plan = c.executor->plan();
  RungProbes probes = probe_rung(*c.executor, c.inputs, parse_probes("ops"), 2, "");
  ASSERT_TRUE(probes.ops_enabled);
  const nlohmann::json ops = ops_json(result_with(probes, 1e6));
  EXPECT_EQ(ops["iterations"], 2);
  const nlohmann::json& records = ops["records"];
  ASSERT_EQ(records.size(), plan.steps.size());
  double total = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const nlohmann::json& rec = records[i];
    EXPECT_EQ(rec["step"], i);
    EXPECT_EQ(rec["node"], plan.steps[i].node_name);
    EXPECT_EQ(rec["kernel"], plan.steps[i].kernel);
    EXPECT_EQ(rec["op"], std::string(ir::to_string(plan.steps[i].op)));
    EXPECT_EQ(rec["output_shape"].get<ir::Shape>(), plan.steps[i].output_shape);
    EXPECT_EQ(rec["input_shapes"].size(), plan.steps[i].input_shapes.size());
    for (const char* key : {"lowering", "flops", "bytes", "ns_per_iteration", "ns_min", "ns_median",
                            "gflops", "pct_peak_flops", "gbps", "pct_peak_bw", "counters"}) {
      EXPECT_TRUE(rec.contains(key)) << key;
    }
    total += rec["ns_per_iteration"].get<double>();
  }
  EXPECT_NEAR(ops["total_ns_per_iteration"].get<double>(), total, 1e-6 * total);
  EXPECT_EQ(ops["measured_ns_per_iteration"], 1e6);
}

TEST(OpsProfile, OpsSumIsCloseToTheWallTimeOfTheSameRuns) {
  Compiled c = tiny_resnet();
  const size_t steps = c.executor->plan().steps.size();
  OpProfiler profiler(steps);
  c.executor->set_observer(&profiler);
  constexpr int kRuns = 7;
  std::vector<double> wall;
  for (int i = 0; i < kRuns; ++i) {
    const int64_t t0 = probes::now_ns();
    c.executor->run(c.inputs);
    wall.push_back(static_cast<double>(probes::now_ns() - t0));
  }
  std::vector<double> fraction;
  for (int i = 0; i < kRuns; ++i) {
    double sum = 0;
    for (size_t s = 0; s < steps; ++s) sum += profiler.step_ns(s)[static_cast<size_t>(i)];
    // The regions are disjoint parts of the run (the slack: two clocks, calibrated).
    EXPECT_LE(sum, wall[static_cast<size_t>(i)] * 1.001 + 1000) << i;
    fraction.push_back(sum / wall[static_cast<size_t>(i)]);
  }
  // A sanity bound, not a speed assertion: the steps are most of a run.
  EXPECT_GT(stats::median_of(fraction), 0.5);
}

TEST(ProbeRung, CountersPerRunAndPerOp) {
  Compiled c = tiny_resnet();
  const RungProbes probes =
      probe_rung(*c.executor, c.inputs, parse_probes("ops,perf:task-clock"), 3, "");
  ASSERT_EQ(probes.counters.size(), 1u);
  const CounterValue& run = probes.counters[0];
  EXPECT_EQ(run.name, "task-clock");
  ASSERT_TRUE(run.supported) << run.reason;  // a software event: countable here
  EXPECT_GT(run.value, 0);
  EXPECT_EQ(probes.probe_real_ns.size(), 3u);
  double ops_task_clock = 0;
  for (const OpRecord& r : probes.ops.records) {
    ASSERT_EQ(r.counters.size(), 1u);
    EXPECT_EQ(r.counters[0].name, "task-clock");
    EXPECT_TRUE(r.counters[0].supported);
    ops_task_clock += r.counters[0].value;
  }
  // The ops are disjoint parts of a run, read from the same counters: together they count
  // something, and no more than the whole run (per iteration both; slack for the reads).
  EXPECT_GT(ops_task_clock, 0);
  EXPECT_LE(ops_task_clock, run.value * 1.01 + 1e5);
}

TEST(ProbeRung, UnknownEventIsAUserError) {
  EXPECT_THROW(check_probe_events(parse_probes("perf:no-such-event-xyz")), UserError);
}

TEST(OpsTable, TopOpsAndTheCheckLine) {
  RungProbes probes;
  probes.ops_enabled = true;
  probes.ops.iterations = 1;
  probes.ops.clock = "tsc";
  for (int i = 0; i < 3; ++i) {
    OpRecord r;
    r.step = static_cast<size_t>(i);
    r.node = std::string("n").append(std::to_string(i));
    r.op = "conv2d";
    r.kernel = "conv2d.im2col";
    r.lowering = "generated";
    r.flops = 2e6;
    r.ns_per_iteration = 1e6 * (i + 1);  // 1, 2, 3 ms
    probes.ops.records.push_back(r);
  }
  const std::string text = format_ops_table(result_with(probes, 8e6), 2);
  EXPECT_LT(text.find(" n2\n"), text.find(" n1\n")) << text;  // the slowest first
  EXPECT_EQ(text.find(" n0\n"), std::string::npos) << text;   // beyond the limit
  EXPECT_NE(text.find("1 more ops"), std::string::npos) << text;
  EXPECT_NE(text.find("ops sum 6.000 ms vs measured 8.000 ms (75.0%)"), std::string::npos) << text;
}

TEST(OpsTable, CheckLineAlsoAgainstTheProbeIterations) {
  RungProbes probes;
  probes.ops_enabled = true;
  probes.ops.iterations = 2;
  OpRecord r;
  r.ns_per_iteration = 3e6;
  probes.ops.records.push_back(r);
  probes.probe_real_ns = {3e6, 5e6};  // mean 4 ms
  const std::string text = format_ops_table(result_with(probes, 6e6), 15);
  EXPECT_NE(text.find("(50.0%); probe iterations took 4.000 ms (mean, probes on: ops sum 75.0% "
                      "of it)"),
            std::string::npos)
      << text;
}

TEST(ProbeSpec, ParsesEveryKind) {
  const ProbeSpec s = parse_probes("ops,perf:task-clock,perf:page-faults,samples:499");
  EXPECT_TRUE(s.ops);
  EXPECT_EQ(s.perf_events, (std::vector<std::string>{"task-clock", "page-faults"}));
  EXPECT_TRUE(s.samples);
  EXPECT_EQ(s.sample_hz, 499);
  EXPECT_TRUE(s.any());
}

TEST(ProbeSpec, EmptyMeansNone) {
  EXPECT_FALSE(parse_probes("").any());
}

TEST(ProbeSpec, SamplesDefaultRate) {
  EXPECT_EQ(parse_probes("samples").sample_hz, kDefaultSampleHz);
}

TEST(ProbeSpec, UnknownNameIsAUserErrorNamingTheFlagAndTheValidNames) {
  try {
    parse_probes("ops,bogus");
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--probes"), std::string::npos) << what;
    EXPECT_NE(what.find("'bogus'"), std::string::npos) << what;
    EXPECT_NE(what.find("ops, perf:EVENT"), std::string::npos) << what;
  }
}

TEST(ProbeSpec, MalformedNamesAreUserErrors) {
  EXPECT_THROW(parse_probes("perf:"), UserError);
  EXPECT_THROW(parse_probes("samples:0"), UserError);
  EXPECT_THROW(parse_probes("samples:17x"), UserError);
  EXPECT_THROW(parse_probes("ops,"), UserError);  // an empty name
}

TEST(ProbeIterations, AsManyAsMeasuredWithinABudgetAtLeastThree) {
  Measurement m;
  m.real_ns.assign(100, 1e6);  // 1 ms each: 1 s fits 1000, but only 100 were measured
  EXPECT_EQ(default_probe_iterations(m, 0), 100);
  m.real_ns.assign(100, 1e8);  // 0.1 s each: 1 s fits 10
  EXPECT_EQ(default_probe_iterations(m, 0), 10);
  EXPECT_EQ(default_probe_iterations(m, 2.0), 20);
  m.real_ns.assign(7, 5e9);  // slow: still 3
  EXPECT_EQ(default_probe_iterations(m, 0), 3);
}

}  // namespace
}  // namespace cuvil::bench
