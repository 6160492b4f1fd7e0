// run.json follows Google Benchmark's schema so its tools can read it.
#include <gtest/gtest.h>

#include <fstream>

#include "bench_suite/json_report.h"

namespace cuvil::bench {
namespace {

RungResult sample_result() {
  RungResult r;
  r.suite = "resnet50";
  r.rung = "b1";
  r.threads = 2;
  r.measurement.real_ns = {2e6, 1e6, 3e6};
  r.measurement.cpu_ns = {4e6, 2e6, 6e6};
  r.declared_flops = 8e9;
  return r;
}

TEST(JsonReport, IterationEntriesHaveGoogleBenchmarkFields) {
  const nlohmann::json entries = benchmark_entries(sample_result(), 0);
  const nlohmann::json& first = entries[0];
  for (const char* key : {"name", "run_name", "run_type", "repetitions", "repetition_index",
                          "threads", "iterations", "real_time", "cpu_time", "time_unit"}) {
    EXPECT_TRUE(first.contains(key)) << key;
  }
  EXPECT_EQ(first["run_type"], "iteration");
  EXPECT_EQ(first["time_unit"], "ms");
  EXPECT_DOUBLE_EQ(first["real_time"].get<double>(), 2.0);
  EXPECT_TRUE(first["iterations"].is_number_integer());
}

TEST(JsonReport, AggregatesCarryAggregateName) {
  const nlohmann::json entries = benchmark_entries(sample_result(), 0);
  ASSERT_EQ(entries.size(), 3u + 6u);
  const nlohmann::json& median = entries[4];
  EXPECT_EQ(median["run_type"], "aggregate");
  EXPECT_EQ(median["aggregate_name"], "median");
  EXPECT_EQ(median["name"], "resnet50/b1_median");
  EXPECT_EQ(median["run_name"], "resnet50/b1");
  EXPECT_DOUBLE_EQ(median["real_time"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(median["GFLOP/s"].get<double>(), 4000.0);  // 8 GFLOP in 2 ms
  EXPECT_EQ(median["cuvil"]["real_ns"].size(), 3u);
}

TEST(JsonReport, ContextHasGoogleBenchmarkFields) {
  const nlohmann::json c = context_json({"cuvil-bench", "cfg", "abc", "cpu"});
  for (const char* key : {"date", "host_name", "executable", "num_cpus", "mhz_per_cpu",
                          "cpu_scaling_enabled", "caches", "library_build_type"}) {
    EXPECT_TRUE(c.contains(key)) << key;
  }
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
