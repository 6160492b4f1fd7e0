// Reading run.json: cuvil's raw samples, plain Google Benchmark output, and bad input.
#include "reports/run_document.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "tests/base/user_error_of.h"
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

std::string error_of_document(const std::string& text) {
  return user_error_of([&] { benchmarks_of(nlohmann::json::parse(text), "doc.json"); });
}

TEST(RunDocument, AnOverflowingTimeInAFileIsAUserErrorNamingItsPointer) {
  testing::ScratchDir dir;
  const std::string path = dir.file("overflow.json");
  std::ofstream(path) << R"({"benchmarks":[{"name":"x/y","real_time":1e999}]})";
  EXPECT_EQ(user_error_of([&] { read_run_json(path); }),
            path + ": /benchmarks/0/real_time: the number 1e999 is out of range (beyond a double)");
}

TEST(RunDocument, FieldsOfTheWrongTypeAreUserErrorsNamingTheirPointer) {
  EXPECT_EQ(error_of_document(R"({"benchmarks":[{"name":"a","real_time":1,"run_type":7}]})"),
            "doc.json: /benchmarks/0/run_type: expected a string, got a number");
  EXPECT_EQ(
      error_of_document(R"({"benchmarks":[{"name":"a","real_time":1,"error_occurred":"yes"}]})"),
      "doc.json: /benchmarks/0/error_occurred: expected true or false, got a string \"yes\"");
  EXPECT_EQ(error_of_document(R"({"benchmarks":[{"name":"a","real_time":1,"time_unit":3}]})"),
            "doc.json: /benchmarks/0/time_unit: expected a string, got a number");
  EXPECT_EQ(error_of_document(R"({"benchmarks":[{"name":"a","run_name":[],"real_time":1}]})"),
            "doc.json: /benchmarks/0/run_name: expected a string, got an array");
  EXPECT_EQ(error_of_document(R"({"benchmarks":[{"name":"a_median","run_type":"aggregate",
      "aggregate_name":{},"real_time":1}]})"),
            "doc.json: /benchmarks/0/aggregate_name: expected a string, got an object");
  EXPECT_EQ(error_of_document(R"({"benchmarks":[{"name":"a","real_time":1,"GFLOP/s":"many"}]})"),
            "doc.json: /benchmarks/0/GFLOP~1s: expected a number, got a string");
  EXPECT_EQ(
      error_of_document(R"({"benchmarks":[{"name":"a","real_time":1,"cuvil":{"noisy":"x"}}]})"),
      "doc.json: /benchmarks/0/cuvil/noisy: expected true or false, got a string \"x\"");
  EXPECT_EQ(error_of_document(R"({"benchmarks":[{"name":"a","real_time":1,"cuvil":5}]})"),
            "doc.json: /benchmarks/0/cuvil: expected an object, got a number");
  EXPECT_EQ(error_of_document(R"({"benchmarks":{"name":"a"}})"),
            "doc.json: /benchmarks: expected an array, got an object");
  EXPECT_EQ(error_of_document(R"({"benchmarks":[3]})"),
            "doc.json: /benchmarks/0: expected an object, got a number");
}

TEST(RunDocument, TimesOutOfRangeAreUserErrorsNamingTheirPointer) {
  // Finite in seconds, beyond a double in nanoseconds.
  EXPECT_EQ(error_of_document(R"({"benchmarks":[{"name":"a","real_time":1e300,"time_unit":"s"}]})"),
            "doc.json: /benchmarks/0/real_time: the time 1e+300 is out of range");
  EXPECT_EQ(error_of_document(R"({"benchmarks":[{"name":"a","real_time":1,"cpu_time":-2}]})"),
            "doc.json: /benchmarks/0/cpu_time: expected a number >= 0, got -2");
  auto doc = run_document({{"s/r", {1, 2, 3}}});
  doc["benchmarks"][3]["cuvil"]["real_ns"][2] = "3";
  EXPECT_EQ(user_error_of([&] { benchmarks_of(doc, "doc.json"); }),
            "doc.json: /benchmarks/3/cuvil/real_ns/2: expected a number, got a string");
  doc = run_document({{"s/r", {1, 2, 3}}});
  doc["benchmarks"][3]["threads"] = 1e10;
  EXPECT_EQ(user_error_of([&] { benchmarks_of(doc, "doc.json"); }),
            "doc.json: /benchmarks/3/threads: the integer 10000000000.0 is out of range [1, "
            "2147483647]");
  doc["benchmarks"][3]["threads"] = 1.5;
  EXPECT_EQ(user_error_of([&] { benchmarks_of(doc, "doc.json"); }),
            "doc.json: /benchmarks/3/threads: expected an integer, got 1.5");
}

TEST(RunDocument, ControlCharactersInQuotedNamesAreEscaped) {
  // A median entry without a time: the message quotes the name.
  const std::string message = error_of_document(
      R"({"benchmarks":[{"name":"x\u001b[31m\nfake","run_type":"aggregate","aggregate_name":"stddev"}]})");
  EXPECT_EQ(message, "doc.json: /benchmarks/0: 'x\\x1b[31m\\x0afake' has no timing samples");
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(RunDocument, FirstStringFollowsPointersInOrder) {
  const auto j = nlohmann::json::parse(R"({"a": {"b": 3, "c": "yes"}, "d": "top"})");
  EXPECT_EQ(first_string(j, {"/a/b", "/a/c", "/d"}), "yes");
  EXPECT_EQ(first_string(j, {"/x/y", "/d"}), "top");
  EXPECT_EQ(first_string(j, {"/d/e"}), "");
}

}  // namespace
}  // namespace cuvil::reports
