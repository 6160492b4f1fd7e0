// Reading run.json: cuvil's raw samples, plain Google Benchmark output, and bad input.
#include "reports/run_document.h"

#include <gtest/gtest.h>

#include <fstream>

#include "passes/ir/error.h"
#include "tests/reports/run_json_fixture.h"

namespace cuvil::reports {
namespace {

using testing::FixtureBenchmark;
using testing::run_document;

TEST(RunDocument, RawSamplesComeFromTheMedianEntry) {
  const auto doc = run_document({{"resnet50/b1", {3e6, 1e6, 2e6}}, {"resnet50/b8", {5e6}}});
  const auto list = benchmarks_of(doc, "doc");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "resnet50/b1");
  EXPECT_EQ(list[0].suite, "resnet50");
  EXPECT_EQ(list[0].rung, "b1");
  EXPECT_EQ(list[0].real_ns, (std::vector<double>{3e6, 1e6, 2e6}));
  EXPECT_EQ(list[0].cpu_ns.size(), 3u);
  EXPECT_EQ(list[0].threads, 2);
  EXPECT_DOUBLE_EQ(list[0].gflops, 12.5);
  EXPECT_EQ(list[1].real_ns.size(), 1u);
}

TEST(RunDocument, PlainGoogleBenchmarkIterationsAreSamples) {
  // No cuvil key, no run_name, microseconds, an aggregate named by suffix only.
  const auto doc = nlohmann::json::parse(R"({
    "context": {},
    "benchmarks": [
      {"name": "BM_Gemm/64", "run_type": "iteration", "real_time": 2.5, "cpu_time": 2.4,
       "time_unit": "us", "iterations": 1000},
      {"name": "BM_Gemm/64", "run_type": "iteration", "real_time": 3.5, "cpu_time": 3.4,
       "time_unit": "us", "iterations": 1000},
      {"name": "BM_Gemm/64_mean", "run_type": "aggregate", "aggregate_name": "mean",
       "real_time": 3.0, "cpu_time": 2.9, "time_unit": "us"},
      {"name": "BM_Broken", "error_occurred": true, "error_message": "skipped"},
      {"name": "BM_Copy", "real_time": 7, "cpu_time": 7}
    ]})");
  const auto list = benchmarks_of(doc, "gb.json");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "BM_Gemm/64");
  EXPECT_EQ(list[0].real_ns, (std::vector<double>{2500, 3500}));
  EXPECT_EQ(list[1].name, "BM_Copy");
  EXPECT_EQ(list[1].real_ns, (std::vector<double>{7}));  // default unit ns
  EXPECT_EQ(list[1].rung, "");
}

TEST(RunDocument, AggregatesOnlyGiveOneSample) {
  const auto doc = nlohmann::json::parse(R"({"benchmarks": [
      {"name": "x_median", "run_type": "aggregate", "aggregate_name": "median",
       "real_time": 4, "time_unit": "ms"}]})");
  const auto list = benchmarks_of(doc, "agg.json");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, "x");
  EXPECT_EQ(list[0].real_ns, (std::vector<double>{4e6}));
}

TEST(RunDocument, NoisyFlagIsReadWhenPresent) {
  auto doc = run_document({{"s/r", {1, 2, 3}}});
  doc["benchmarks"][3]["cuvil"]["noisy"] = true;
  EXPECT_TRUE(benchmarks_of(doc, "doc")[0].noisy);
}

TEST(RunDocument, MissingBenchmarksArrayIsAUserError) {
  EXPECT_THROW(benchmarks_of(nlohmann::json::parse(R"({"context": {}})"), "x"), UserError);
  EXPECT_THROW(benchmarks_of(nlohmann::json::array(), "x"), UserError);
}

TEST(RunDocument, EntryWithoutNameIsAUserError) {
  EXPECT_THROW(benchmarks_of(nlohmann::json::parse(R"({"benchmarks": [{"real_time": 1}]})"), "x"),
               UserError);
}

TEST(RunDocument, NegativeOrTextTimeIsAUserError) {
  EXPECT_THROW(
      benchmarks_of(nlohmann::json::parse(R"({"benchmarks": [{"name": "a", "real_time": -1}]})"),
                    "x"),
      UserError);
  EXPECT_THROW(
      benchmarks_of(
          nlohmann::json::parse(R"({"benchmarks": [{"name": "a", "real_time": "fast"}]})"), "x"),
      UserError);
}

TEST(RunDocument, UnknownTimeUnitIsAUserError) {
  EXPECT_THROW(
      benchmarks_of(nlohmann::json::parse(
                        R"({"benchmarks": [{"name": "a", "real_time": 1, "time_unit": "h"}]})"),
                    "x"),
      UserError);
}

TEST(RunDocument, MissingFileIsAUserErrorNamingIt) {
  try {
    read_run_json("/nonexistent/run.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/run.json"), std::string::npos);
  }
}

TEST(RunDocument, MalformedJsonIsAUserErrorWithItsPosition) {
  testing::ScratchDir dir;
  const std::string path = dir.file("bad.json");
  std::ofstream(path) << "{\"benchmarks\": [\n  {\"name\": }\n]}";
  try {
    read_run_json(path);
    FAIL();
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("bad.json: malformed JSON"), std::string::npos) << message;
    EXPECT_NE(message.find("line 2"), std::string::npos) << message;
  }
}

TEST(RunDocument, FirstStringFollowsPointersInOrder) {
  const auto j = nlohmann::json::parse(R"({"a": {"b": 3, "c": "yes"}, "d": "top"})");
  EXPECT_EQ(first_string(j, {"/a/b", "/a/c", "/d"}), "yes");
  EXPECT_EQ(first_string(j, {"/x/y", "/d"}), "top");
  EXPECT_EQ(first_string(j, {"/d/e"}), "");
}

}  // namespace
}  // namespace cuvil::reports
