// Chrome Trace Event output (what Perfetto opens): required fields per event, one track per
// rung, ops back to back in step order without overlap, per-op args.
#include <gtest/gtest.h>

#include <map>

#include "reports/flame/chrome_trace.h"
#include "tests/reports/flame_fixture.h"

namespace cuvil::reports::flame {
namespace {

using nlohmann::json;

json two_rung_trace() {
  const auto doc = testing::run_with_ops(
      {testing::resnet_like("resnet50/b1"), testing::resnet_like("resnet50/b8", 3.3)});
  return to_chrome_trace(read_op_records(doc, "r.json"), "r.json");
}

std::vector<json> complete_events(const json& trace) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") out.push_back(e);
  }
  return out;
}

TEST(FlameTrace, EveryEventHasTheFieldsTheFormatRequires) {
  const json trace = two_rung_trace();
  ASSERT_TRUE(trace["traceEvents"].is_array());
  for (const json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("name") && e["name"].is_string()) << e;
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string()) << e;
    ASSERT_TRUE(e.contains("pid") && e["pid"].is_number_integer()) << e;
    ASSERT_TRUE(e.contains("tid") && e["tid"].is_number_integer()) << e;
    if (e["ph"] == "X") {
      ASSERT_TRUE(e.contains("ts") && e["ts"].is_number()) << e;
      ASSERT_TRUE(e.contains("dur") && e["dur"].is_number() && e["dur"] >= 0) << e;
    } else {
      EXPECT_EQ(e["ph"], "M") << e;
      EXPECT_TRUE(e["args"].contains("name") || e["args"].contains("sort_index")) << e;
    }
  }
}

TEST(FlameTrace, OneCompleteEventPerOpWithItsKernelFlopsAndBytes) {
  const auto events = complete_events(two_rung_trace());
  ASSERT_EQ(events.size(), 14u);
  EXPECT_EQ(events[2]["name"], "layer1.0.conv2");
  EXPECT_EQ(events[2]["args"]["kernel"], "conv2d.im2col");
  EXPECT_DOUBLE_EQ(events[2]["args"]["flops"].get<double>(), 3000);
  EXPECT_DOUBLE_EQ(events[2]["args"]["bytes"].get<double>(), 900);
  EXPECT_DOUBLE_EQ(events[2]["dur"].get<double>(), 7.3);  // microseconds
}

TEST(FlameTrace, EachRungHasItsOwnNamedTrack) {
  const json trace = two_rung_trace();
  std::map<int, std::string> track_names;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") track_names[e["tid"]] = e["args"]["name"];
  }
  ASSERT_EQ(track_names.size(), 2u);
  std::map<int, int> ops_per_track;
  for (const json& e : complete_events(trace)) ++ops_per_track[e["tid"].get<int>()];
  for (const auto& [tid, count] : ops_per_track) {
    EXPECT_TRUE(track_names.count(tid)) << tid;
    EXPECT_EQ(count, 7);
  }
  EXPECT_EQ(track_names.begin()->second, "resnet50/b1");
}

TEST(FlameTrace, EventsOnATrackAreOrderedAndDoNotOverlap) {
  std::map<int, std::vector<json>> tracks;
  for (const json& e : complete_events(two_rung_trace())) tracks[e["tid"]].push_back(e);
  for (const auto& [tid, events] : tracks) {
    EXPECT_DOUBLE_EQ(events.front()["ts"].get<double>(), 0);
    for (size_t i = 1; i < events.size(); ++i) {
      const double end = events[i - 1]["ts"].get<double>() + events[i - 1]["dur"].get<double>();
      EXPECT_GE(events[i]["ts"].get<double>(), end - 1e-9) << "track " << tid << " event " << i;
      EXPECT_GT(events[i]["ts"].get<double>(), events[i - 1]["ts"].get<double>());
      EXPECT_EQ(events[i]["args"]["step"].get<int>(), events[i - 1]["args"]["step"].get<int>() + 1);
    }
  }
}

TEST(FlameTrace, ASingleOpRungIsOneEventAtZero) {
  const auto doc = testing::run_with_ops({{"toy/r1", {{"only", "add", "add", 5}}}});
  const auto events = complete_events(to_chrome_trace(read_op_records(doc, "r.json"), "r"));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["ts"], 0.0);
  EXPECT_DOUBLE_EQ(events[0]["dur"].get<double>(), 0.005);
}

}  // namespace
}  // namespace cuvil::reports::flame
