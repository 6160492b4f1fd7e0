// speedscope output checked against the structure of its file-format schema
// (https://www.speedscope.app/file-format-schema.json, generated from speedscope's
// src/lib/file-format-spec.ts): required fields, their types, and the index/length rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "reports/flame/folded.h"
#include "reports/flame/op_records.h"
#include "reports/flame/speedscope.h"
#include "tests/reports/flame_fixture.h"

namespace cuvil::reports::flame {
namespace {

using nlohmann::json;

// Appends a line to `problems` per schema violation.
class SpeedscopeChecker {
 public:
  std::vector<std::string> check(const json& file) {
    problems_.clear();
    if (!file.is_object()) return fail("file: not an object");
    require_string(file, "$schema", "file");
    if (file.contains("$schema") && file["$schema"] != kSpeedscopeSchema) fail("$schema value");
    optional(file, "name", &json::is_string, "file");
    optional(file, "activeProfileIndex", &json::is_number, "file");
    optional(file, "exporter", &json::is_string, "file");
    size_t frame_count = 0;
    if (!file.contains("shared") || !file["shared"].is_object()) {
      fail("shared: missing or not an object");
    } else if (!file["shared"].contains("frames") || !file["shared"]["frames"].is_array()) {
      fail("shared.frames: missing or not an array");
    } else {
      for (const json& frame : file["shared"]["frames"]) {
        if (!frame.is_object()) {
          fail("frame: not an object");
          continue;
        }
        require_string(frame, "name", "frame");
        optional(frame, "file", &json::is_string, "frame");
        optional(frame, "line", &json::is_number, "frame");
        optional(frame, "col", &json::is_number, "frame");
      }
      frame_count = file["shared"]["frames"].size();
    }
    if (!file.contains("profiles") || !file["profiles"].is_array()) {
      fail("profiles: missing or not an array");
    } else {
      for (const json& p : file["profiles"]) profile(p, frame_count);
    }
    return problems_;
  }

 private:
  std::vector<std::string> fail(const std::string& problem) {
    problems_.push_back(problem);
    return problems_;
  }
  void require_string(const json& j, const char* key, const char* where) {
    if (!j.contains(key) || !j[key].is_string()) fail(std::string(where) + "." + key);
  }
  void require_number(const json& j, const char* key, const char* where) {
    if (!j.contains(key) || !j[key].is_number()) fail(std::string(where) + "." + key);
  }
  void optional(const json& j, const char* key, bool (json::*type)() const noexcept,
                const char* where) {
    if (j.contains(key) && !(j[key].*type)()) fail(std::string(where) + "." + key + " type");
  }
  bool frame_index(const json& j, size_t frame_count) {
    return j.is_number_unsigned() && j.get<size_t>() < frame_count;
  }

  void profile(const json& p, size_t frame_count) {
    if (!p.is_object()) {
      fail("profile: not an object");
      return;
    }
    require_string(p, "name", "profile");
    require_number(p, "startValue", "profile");
    require_number(p, "endValue", "profile");
    static const std::vector<std::string> units = {"none",         "nanoseconds", "microseconds",
                                                   "milliseconds", "seconds",     "bytes"};
    if (!p.contains("unit") || !p["unit"].is_string() ||
        std::find(units.begin(), units.end(), p["unit"].get<std::string>()) == units.end()) {
      fail("profile.unit");
    }
    const std::string type = p.value("type", "");
    if (type == "sampled") {
      if (!p.contains("samples") || !p["samples"].is_array()) return (void)fail("samples");
      if (!p.contains("weights") || !p["weights"].is_array()) return (void)fail("weights");
      if (p["samples"].size() != p["weights"].size()) fail("samples and weights differ in length");
      for (const json& stack : p["samples"]) {
        if (!stack.is_array()) {
          fail("sample: not an array");
          continue;
        }
        for (const json& i : stack) {
          if (!frame_index(i, frame_count)) fail("sample: bad frame index");
        }
      }
      for (const json& w : p["weights"]) {
        if (!w.is_number()) fail("weight: not a number");
      }
    } else if (type == "evented") {
      if (!p.contains("events") || !p["events"].is_array()) return (void)fail("events");
      double last = -1e300;
      for (const json& e : p["events"]) {
        if (!e.is_object() || !e.contains("at") || !e["at"].is_number()) {
          fail("event.at");
          continue;
        }
        if (e.value("type", "") != "O" && e.value("type", "") != "C") fail("event.type");
        if (!e.contains("frame") || !frame_index(e["frame"], frame_count)) fail("event.frame");
        if (e["at"].get<double>() < last) fail("events out of order");
        last = e["at"].get<double>();
      }
    } else {
      fail("profile.type '" + type + "'");
    }
  }

  std::vector<std::string> problems_;
};

json resnet_speedscope() {
  const FrameTree tree =
      tree_from_ops(read_op_records(testing::run_with_ops({testing::resnet_like()}), "r.json"));
  return to_speedscope(tree, "resnet50/b1");
}

TEST(FlameSpeedscope, OutputFollowsTheSchema) {
  const json file = resnet_speedscope();
  EXPECT_EQ(SpeedscopeChecker().check(file), std::vector<std::string>{});
  EXPECT_EQ(file["profiles"][0]["type"], "sampled");
  EXPECT_EQ(file["profiles"][0]["unit"], "nanoseconds");
}

TEST(FlameSpeedscope, TheCheckerCatchesBrokenFiles) {
  json file = resnet_speedscope();
  file["profiles"][0]["samples"][0][0] = 999;
  file["profiles"][0]["weights"].push_back("heavy");
  file["shared"]["frames"][0].erase("name");
  file.erase("$schema");
  EXPECT_EQ(SpeedscopeChecker().check(file).size(), 5u);  // index, length, weight, name, $schema
}

TEST(FlameSpeedscope, WeightsSumToTheTotalAndEndValue) {
  const json file = resnet_speedscope();
  double sum = 0;
  for (const json& w : file["profiles"][0]["weights"]) sum += w.get<double>();
  EXPECT_DOUBLE_EQ(sum, 1700 + 3100 + 7300 + 1100 + 170 + 30 + 1300);
  EXPECT_DOUBLE_EQ(file["profiles"][0]["endValue"].get<double>(), sum);
  EXPECT_EQ(file["profiles"][0]["startValue"], 0);
}

TEST(FlameSpeedscope, SamplesAreTheStacksInStepOrder) {
  const json file = resnet_speedscope();
  const json& frames = file["shared"]["frames"];
  const json& first = file["profiles"][0]["samples"][0];
  std::vector<std::string> names;
  for (const json& i : first) names.push_back(frames[i.get<size_t>()]["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"resnet50/b1", "conv2d conv1", "conv2d.im2col"}));
  const json& second = file["profiles"][0]["samples"][1];
  EXPECT_EQ(frames[second[3].get<size_t>()]["name"], "conv2d layer1.0.conv1");
}

TEST(FlameSpeedscope, FramesAreSharedByName) {
  const json file = resnet_speedscope();
  std::set<std::string> names;
  for (const json& f : file["shared"]["frames"]) names.insert(f["name"].get<std::string>());
  EXPECT_EQ(names.size(), file["shared"]["frames"].size());
  EXPECT_EQ(names.count("conv2d.im2col"), 1u);
}

TEST(FlameSpeedscope, SampleCountsHaveNoTimeUnit) {
  const json file = to_speedscope(parse_folded("a;b 3\na;c 1\n", "s"), "samples");
  EXPECT_EQ(SpeedscopeChecker().check(file), std::vector<std::string>{});
  EXPECT_EQ(file["profiles"][0]["unit"], "none");
  EXPECT_EQ(file["profiles"][0]["weights"], json({3.0, 1.0}));
}

}  // namespace
}  // namespace cuvil::reports::flame
