// run.json follows Google Benchmark's schema so its tools can read it: field names and JSON types
// are checked against a document Google Benchmark 1.7.1 (Debian 12's libbenchmark) wrote.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "bench_suite/json_report.h"

namespace cuvil::bench {
namespace {

// Output of a two-repetition Google Benchmark 1.7.1 program with one user counter, trimmed to
// one cache and to the iteration, median and cv entries.
const char* kGoogleBenchmarkJson = R"({
  "context": {
    "date": "2026-12-01T02:26:02+00:00",
    "host_name": "vm",
    "executable": "./gb",
    "num_cpus": 2,
    "mhz_per_cpu": 2600,
    "cpu_scaling_enabled": false,
    "caches": [
      {"type": "Data", "level": 1, "size": 49152, "num_sharing": 1}
    ],
    "load_avg": [9.16113, 4.12061, 2.57227],
    "library_build_type": "debug"
  },
  "benchmarks": [
    {
      "name": "BM_x/repeats:2", "family_index": 0, "per_family_instance_index": 0,
      "run_name": "BM_x/repeats:2", "run_type": "iteration", "repetitions": 2,
      "repetition_index": 0, "threads": 1, "iterations": 10000000,
      "real_time": 5.1833812998665962e+00, "cpu_time": 3.8185340000000001e-01,
      "time_unit": "ns", "GFLOP/s": 1.5000000000000000e+00
    },
    {
      "name": "BM_x/repeats:2_median", "family_index": 0, "per_family_instance_index": 0,
      "run_name": "BM_x/repeats:2", "run_type": "aggregate", "repetitions": 2, "threads": 1,
      "aggregate_name": "median", "aggregate_unit": "time", "iterations": 2,
      "real_time": 4.9880104497788125e+00, "cpu_time": 3.8506294999999996e-01,
      "time_unit": "ns", "GFLOP/s": 1.5000000000000000e+00
    },
    {
      "name": "BM_x/repeats:2_cv", "family_index": 0, "per_family_instance_index": 0,
      "run_name": "BM_x/repeats:2", "run_type": "aggregate", "repetitions": 2, "threads": 1,
      "aggregate_name": "cv", "aggregate_unit": "percentage", "iterations": 2,
      "real_time": 4.7262791042641077e-02, "cpu_time": 6.3037617121085359e-03,
      "time_unit": "ns", "GFLOP/s": 0.0000000000000000e+00
    }
  ]
})";

std::string kind(const nlohmann::json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number_float()) return "float";
  if (j.is_string()) return "string";
  if (j.is_boolean()) return "boolean";
  if (j.is_array()) return "array";
  if (j.is_object()) return "object";
  return "null";
}

// Every field of `reference` is in `ours` with the same JSON type.
void expect_same_fields(const nlohmann::json& reference, const nlohmann::json& ours,
                        const std::string& where) {
  for (const auto& [key, value] : reference.items()) {
    ASSERT_TRUE(ours.contains(key)) << where << ": missing '" << key << "'";
    EXPECT_EQ(kind(ours[key]), kind(value)) << where << ": '" << key << "'";
  }
}

RungResult sample_result() {
  RungResult r;
  r.suite = "resnet50";
  r.rung = "b1";
  r.threads = 2;
  r.measurement.real_ns = {2e6, 1e6, 3e6};
  r.measurement.cpu_ns = {4e6, 2e6, 6e6};
  r.measurement.warmup_real_ns = {9e6};
  r.measurement.stop_reason = StopReason::timeout;
  r.measurement.noisy = true;
  r.measurement.noise = 0.5;
  r.measurement.max_noise = 0.02;
  r.declared_flops = 8e9;
  r.declared_bytes = 1e9;
  r.peak.fp32_gflops = 8000;
  r.peak.mem_read_gbps = 20;
  r.peak_rss_bytes = 123 << 20;
  r.weight_bytes = 40 << 20;
  r.plan_weight_bytes = 45 << 20;
  return r;
}

RunContext sample_context() {
  RunContext c;
  c.executable = "cuvil-bench";
  c.config_source = "configs/resnet50.cpu.cuvilpass";
  c.config_hash = "abc";
  c.config_yaml = "cuvil_pass_version: 1\n";
  c.environment = capture_environment();
  c.peak.threads = 2;
  c.peak.fp32_gflops = 100;
  c.peak.bf16_gflops = 200;
  c.peak.mem_read_gbps = 10;
  c.threads = 2;
  return c;
}

const nlohmann::json* find_aggregate(const nlohmann::json& entries, const std::string& name) {
  for (const auto& e : entries) {
    if (e.value("aggregate_name", "") == name) return &e;
  }
  return nullptr;
}

TEST(JsonReport, ContextMatchesGoogleBenchmarkFieldsAndTypes) {
  const nlohmann::json reference = nlohmann::json::parse(kGoogleBenchmarkJson);
  RunContext context = sample_context();
  // Some VMs expose no /sys/devices/system/cpu/cpu0/cache (the list is then empty, as Google
  // Benchmark leaves it); the entries' fields are checked on one all the same.
  if (context.environment.caches.empty()) {
    context.environment.caches.push_back({"Unified", 2, 1 << 20, 1});
  }
  const nlohmann::json ours = context_json(context);
  expect_same_fields(reference["context"], ours, "context");
  ASSERT_FALSE(ours["caches"].empty());
  for (const auto& cache : ours["caches"]) {
    expect_same_fields(reference["context"]["caches"][0], cache, "context.caches[]");
  }
  ASSERT_EQ(ours["load_avg"].size(), 3u);
  EXPECT_EQ(kind(ours["load_avg"][0]), "float");
}

TEST(JsonReport, IterationEntriesMatchGoogleBenchmark) {
  const nlohmann::json reference = nlohmann::json::parse(kGoogleBenchmarkJson)["benchmarks"][0];
  const nlohmann::json entries = benchmark_entries(sample_result(), 0);
  for (int i = 0; i < 3; ++i) {
    expect_same_fields(reference, entries[i], "iteration " + std::to_string(i));
    EXPECT_EQ(entries[i]["run_type"], "iteration");
    EXPECT_EQ(entries[i]["repetition_index"], i);
    EXPECT_FALSE(entries[i].contains("aggregate_name"));
  }
  EXPECT_EQ(entries[0]["time_unit"], "ms");
  EXPECT_DOUBLE_EQ(entries[0]["real_time"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(entries[0]["cpu_time"].get<double>(), 4.0);
}

TEST(JsonReport, AggregatesMatchGoogleBenchmark) {
  const nlohmann::json reference = nlohmann::json::parse(kGoogleBenchmarkJson)["benchmarks"];
  const nlohmann::json entries = benchmark_entries(sample_result(), 0);
  for (const char* name : {"mean", "median", "stddev", "cv"}) {
    const nlohmann::json* e = find_aggregate(entries, name);
    ASSERT_NE(e, nullptr) << name;
    expect_same_fields(reference[1], *e, name);
    EXPECT_EQ((*e)["run_type"], "aggregate");
    EXPECT_EQ((*e)["name"], std::string("resnet50/b1_") + name);
    EXPECT_EQ((*e)["run_name"], "resnet50/b1");
    EXPECT_EQ((*e)["iterations"], 3);  // Google Benchmark: the number of repetitions
    EXPECT_FALSE(e->contains("repetition_index"));
  }
  EXPECT_EQ((*find_aggregate(entries, "cv"))["aggregate_unit"], "percentage");
  EXPECT_EQ((*find_aggregate(entries, "median"))["aggregate_unit"], "time");
}

TEST(JsonReport, AggregateValues) {
  const nlohmann::json entries = benchmark_entries(sample_result(), 0);
  const nlohmann::json& median = *find_aggregate(entries, "median");
  EXPECT_DOUBLE_EQ(median["real_time"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(median["GFLOP/s"].get<double>(), 4000.0);  // 8 GFLOP in 2 ms
  EXPECT_DOUBLE_EQ(median["GB/s"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(median["pct_peak_flops"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(median["pct_peak_bw"].get<double>(), 2500.0);
  EXPECT_DOUBLE_EQ((*find_aggregate(entries, "cv"))["real_time"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ((*find_aggregate(entries, "min"))["real_time"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ((*find_aggregate(entries, "p90"))["real_time"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ((*find_aggregate(entries, "p99.9"))["real_time"].get<double>(), 3.0);
}

// Google Benchmark aggregates a user counter as the statistic of its per-repetition values: the
// stddev and cv entries hold the rates' spread (they used to hold 0), min the lowest rate.
TEST(JsonReport, AggregateCountersAreStatisticsOfThePerIterationRates) {
  const nlohmann::json entries = benchmark_entries(sample_result(), 0);
  // Per iteration: 8 GFLOP in 2, 1 and 3 ms.
  const auto counter = [&](const char* aggregate, const char* name) {
    return (*find_aggregate(entries, aggregate))[name].get<double>();
  };
  const double mean = (4000.0 + 8000.0 + 8000.0 / 3) / 3;
  EXPECT_NEAR(counter("mean", "GFLOP/s"), mean, 1e-9 * mean);
  EXPECT_NEAR(counter("stddev", "GFLOP/s"), 2775.5546659548436, 1e-6);
  EXPECT_NEAR(counter("stddev", "GB/s"), 346.94433324435545, 1e-7);
  EXPECT_NEAR(counter("stddev", "pct_peak_flops"), 100 * 2775.5546659548436 / 8000, 1e-9);
  EXPECT_NEAR(counter("stddev", "pct_peak_bw"), 100 * 346.94433324435545 / 20, 1e-7);
  EXPECT_NEAR(counter("cv", "GFLOP/s"), 0.5677270907634907, 1e-12);  // a ratio, like real_time
  EXPECT_NEAR(counter("cv", "GB/s"), 0.5677270907634907, 1e-12);
  EXPECT_NEAR(counter("cv", "pct_peak_flops"), 0.5677270907634907, 1e-12);
  EXPECT_DOUBLE_EQ(counter("min", "GFLOP/s"), 8000.0 / 3);
  EXPECT_DOUBLE_EQ(counter("max", "GFLOP/s"), 8000.0);
  EXPECT_DOUBLE_EQ(counter("median", "GFLOP/s"), 4000.0);
  // Iterations of one time have rates without spread.
  RungResult steady = sample_result();
  steady.measurement.real_ns = {2e6, 2e6, 2e6};
  const nlohmann::json flat = benchmark_entries(steady, 0);
  EXPECT_EQ((*find_aggregate(flat, "stddev"))["GFLOP/s"], 0.0);
  EXPECT_EQ((*find_aggregate(flat, "cv"))["GB/s"], 0.0);
}

TEST(JsonReport, RawSamplesAndVerdictUnderTheMedianCuvilKey) {
  const nlohmann::json entries = benchmark_entries(sample_result(), 0);
  const nlohmann::json& cuvil = (*find_aggregate(entries, "median"))["cuvil"];
  EXPECT_EQ(cuvil["real_ns"], nlohmann::json({2e6, 1e6, 3e6}));
  EXPECT_EQ(cuvil["cpu_ns"].size(), 3u);
  EXPECT_EQ(cuvil["warmup_ns"], nlohmann::json({9e6}));
  EXPECT_EQ(cuvil["noisy"], true);
  EXPECT_EQ(cuvil["stop_reason"], "timeout");
  EXPECT_DOUBLE_EQ(cuvil["noise"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(cuvil["real"]["p50_ns"].get<double>(), 2e6);
  EXPECT_LE(cuvil["real"]["median_ci_low_ns"].get<double>(), 2e6);
  EXPECT_GE(cuvil["real"]["median_ci_high_ns"].get<double>(), 2e6);
  EXPECT_EQ(cuvil["peak_rss_bytes"], 123 << 20);
  EXPECT_EQ(cuvil["peak_rss_scope"], "process");
  EXPECT_EQ(cuvil["weight_bytes"], 40 << 20);
  EXPECT_EQ(cuvil["plan_weight_bytes"], 45 << 20);
  EXPECT_DOUBLE_EQ(cuvil["declared_flops"].get<double>(), 8e9);
}

TEST(JsonReport, UnknownNoiseIsNull) {
  RungResult r = sample_result();
  r.measurement.noise = std::numeric_limits<double>::infinity();
  const nlohmann::json entries = benchmark_entries(r, 0);
  EXPECT_TRUE((*find_aggregate(entries, "median"))["cuvil"]["noise"].is_null());
}

TEST(JsonReport, ContextCarriesEnvironmentConfigAndPeak) {
  const nlohmann::json c = context_json(sample_context());
  const nlohmann::json& cuvil = c["cuvil"];
  for (const char* key :
       {"git_commit", "git_modified", "compiler", "compiler_flags", "cpu_model", "cpu_flags",
        "scaling_governor", "mem_total_bytes", "mem_available_bytes", "cuda_driver",
        "openmp_wait_policy", "heap_huge_pages", "config", "config_hash", "config_yaml",
        "flop_convention", "machine_peak", "stopping_rule", "warnings"}) {
    EXPECT_TRUE(cuvil.contains(key)) << key;
  }
  EXPECT_EQ(cuvil["config_yaml"], "cuvil_pass_version: 1\n");
  EXPECT_DOUBLE_EQ(cuvil["machine_peak"]["fp32_gflops"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(cuvil["machine_peak"]["bf16_gflops"].get<double>(), 200);
  EXPECT_EQ(cuvil["stopping_rule"]["min_samples"], kDefaultMinSamples);
}

TEST(JsonReport, ContextSaysWhetherTheBuildDifferedFromItsCommit) {
  RunContext c = sample_context();
  for (bool modified : {false, true}) {
    c.environment.git_modified = modified;
    EXPECT_EQ(context_json(c)["cuvil"]["git_modified"].get<bool>(), modified);
  }
}

TEST(JsonReport, AchievedRatesWithoutAPeakHaveNoPercentage) {
  RungResult r = sample_result();
  r.peak.fp32_gflops = 0;
  const Achieved a = achieved(r, 2e6);
  EXPECT_DOUBLE_EQ(a.gflops, 4000);
  EXPECT_EQ(a.pct_peak_flops, 0);
  EXPECT_EQ(achieved(r, 0).gflops, 0);
}

// Without a peak of their own (int8; bf16 where none was measured), bf16 or int8 products get
// no %peak of FLOPs, nor does a rung with any (its bandwidth share stays); fp32 steps beside
// them keep theirs.
TEST(JsonReport, ReducedPrecisionWorkHasNoFp32PeakPercentage) {
  RungResult r = sample_result();
  EXPECT_DOUBLE_EQ(achieved(r, 2e6).pct_peak_flops, 50);
  EXPECT_EQ(format_pct_peak(achieved(r, 2e6)), "50.0");
  r.reduced_precision_flops = 1e9;
  const Achieved a = achieved(r, 2e6);
  EXPECT_DOUBLE_EQ(a.gflops, 4000);
  EXPECT_EQ(a.pct_peak_flops, 0);
  EXPECT_EQ(format_pct_peak(a), "-");
  EXPECT_DOUBLE_EQ(a.pct_peak_bw, 2500);  // 500 GB/s over a peak of 20
  OpRecord op;
  op.flops = 2e6;
  op.ns_per_iteration = 1e3;
  op.kernel = "linear.gemm";
  EXPECT_DOUBLE_EQ(achieved(r, op).pct_peak_flops, 25);
  for (const char* kernel : {"linear.bf16", "conv2d.int8", "conv2d.winograd_bf16"}) {
    op.kernel = kernel;
    EXPECT_EQ(achieved(r, op).pct_peak_flops, 0) << kernel;
  }
  const nlohmann::json entries = benchmark_entries(r, 0);
  EXPECT_EQ((*find_aggregate(entries, "median"))["cuvil"]["reduced_precision_flops"], 1e9);
}

// A rung of 2e9 fp32 FLOPs and 6e9 bf16 ones, peaks 8000 and 16000 GFLOP/s: at those peaks
// 0.25 + 0.375 ms, so 1 ms is 62.5%. A bf16 step is held to the bf16 peak, an int8 one to the
// int8 peak.
TEST(JsonReport, MixedPrecisionRungWeighsEachPartByItsPeak) {
  RungResult r = sample_result();
  r.reduced_precision_flops = 6e9;
  r.bf16_flops = 6e9;
  EXPECT_EQ(achieved(r, 1e6).pct_peak_flops, 0);  // no bf16 peak yet
  r.peak.bf16_gflops = 16000;
  const Achieved a = achieved(r, 1e6);
  EXPECT_DOUBLE_EQ(a.gflops, 8000);
  EXPECT_DOUBLE_EQ(a.pct_peak_flops, 62.5);
  EXPECT_EQ(format_pct_peak(a), "62.5");
  OpRecord op;
  op.flops = 4e6;
  op.ns_per_iteration = 1e3;
  op.kernel = "conv2d.winograd_bf16";
  EXPECT_DOUBLE_EQ(achieved(r, op).pct_peak_flops, 25);
  // 1e9 of the fp32 FLOPs become int8 products: without an int8 peak, none; with one of 32000,
  // 0.125 + 0.375 + 0.03125 ms of 1 ms.
  r.reduced_precision_flops = 7e9;
  EXPECT_EQ(achieved(r, 1e6).pct_peak_flops, 0);
  op.kernel = "conv2d.int8";
  EXPECT_EQ(achieved(r, op).pct_peak_flops, 0);
  r.peak.int8_gflops = 32000;
  EXPECT_DOUBLE_EQ(achieved(r, 1e6).pct_peak_flops, 53.125);
  EXPECT_DOUBLE_EQ(achieved(r, op).pct_peak_flops, 12.5);
  EXPECT_DOUBLE_EQ(achieved(r, 1e6).pct_peak_bw, 5000);  // the bandwidth share either way
  const nlohmann::json entries = benchmark_entries(r, 0);
  EXPECT_EQ((*find_aggregate(entries, "median"))["cuvil"]["bf16_flops"], 6e9);
}

TEST(JsonReport, WriteIsAtomicAndFailsLoudly) {
  const std::string path = ::testing::TempDir() + "run_test.json";
  write_json_file(path, {{"a", 1}});
  std::ifstream in(path);
  EXPECT_EQ(nlohmann::json::parse(in)["a"], 1);
  EXPECT_THROW(write_json_file("/nonexistent-dir/run.json", {}), std::exception);
}

}  // namespace
}  // namespace cuvil::bench
