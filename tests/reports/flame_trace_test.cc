// Chrome Trace Event output (what Perfetto and speedscope open): required fields per event, one
// track per rung, ops back to back in step order without overlap, per-op args, and block events
// that make every op nest under exactly its name's blocks by the rule trace readers apply.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/error.h"
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

// The op events (block events left out).
std::vector<json> complete_events(const json& trace) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] != "block") out.push_back(e);
  }
  return out;
}

// The nesting rule of stackcollapse-chrome-tracing.py (and, for exactly nested input, of
// speedscope and Perfetto): per track, events stably sorted by ts; an event is a child of the
// innermost open event whose [ts, ts + dur) contains it, open events ending at or before its ts
// having closed. Arithmetic in doubles, as those readers do it. Returns one failure message per
// event that overlaps an open event without lying inside it, or whose enclosing events' names
// differ from the blocks of its own name; empty when everything nests.
std::vector<std::string> nesting_failures(const json& trace) {
  struct Event {
    std::string name;
    double ts, end;
  };
  std::map<int, std::vector<Event>> tracks;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const double ts = e["ts"].get<double>();
    tracks[e["tid"].get<int>()].push_back(
        {e["name"].get<std::string>(), ts, ts + e["dur"].get<double>()});
  }
  std::vector<std::string> failures;
  for (auto& [tid, events] : tracks) {
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.ts < b.ts; });
    std::vector<const Event*> open;
    for (const Event& e : events) {
      while (!open.empty() && open.back()->end <= e.ts) open.pop_back();
      if (!open.empty() && e.end > open.back()->end) {
        failures.push_back(e.name + " overlaps " + open.back()->name + " by " +
                           std::to_string(e.end - open.back()->end) + " us");
      }
      std::vector<std::string> path;
      for (const Event* o : open) path.push_back(o->name);
      if (path != node_blocks(e.name)) {
        std::string got;
        for (const std::string& p : path) got += p + " > ";
        failures.push_back(e.name + " nests in [" + got + "]");
      }
      open.push_back(&e);
    }
  }
  return failures;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

json trace_of(const testing::FixtureRung& rung) {
  return to_chrome_trace(read_op_records(testing::run_with_ops({rung}), "r.json"), "r.json");
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
  EXPECT_DOUBLE_EQ(events[2]["args"]["ns_per_iteration"].get<double>(), 7300);
  EXPECT_NEAR(events[2]["dur"].get<double>(), 7.3, 1e-3);  // microseconds, to the 1/1024 us tick
}

TEST(FlameTrace, TimesAreWholeTicks) {
  const json trace = two_rung_trace();  // a range over a member of a temporary would dangle
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    for (const char* key : {"ts", "dur"}) {
      const double ticks = e[key].get<double>() * kTraceTicksPerMicrosecond;
      EXPECT_EQ(ticks, std::floor(ticks)) << key << " of " << e;
    }
  }
}

TEST(FlameTrace, BlocksSpanTheirOpsExactly) {
  const json trace = trace_of(testing::resnet_like());
  std::map<std::string, json> blocks;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "block") blocks[e["name"]] = e;
  }
  ASSERT_EQ(blocks.size(), 3u);  // layer1, layer1.0, layer1.1
  const auto ops = complete_events(trace);
  EXPECT_EQ(blocks["layer1"]["ts"], ops[1]["ts"]);
  EXPECT_EQ(blocks["layer1"]["ts"].get<double>() + blocks["layer1"]["dur"].get<double>(),
            ops[4]["ts"].get<double>() + ops[4]["dur"].get<double>());
  EXPECT_EQ(blocks["layer1"]["args"]["ops"], 4);
  EXPECT_EQ(blocks["layer1.0"]["args"]["ops"], 2);
  EXPECT_EQ(blocks["layer1.1"]["ts"], ops[3]["ts"]);
  EXPECT_EQ(nesting_failures(trace), std::vector<std::string>{});
}

// ResNet-50 b1 on this machine: 57 ops whose mean times are not whole microseconds. Laid out in
// floating-point microseconds, 9 of them overlapped their predecessor by about 5e-13 us.
TEST(FlameTrace, OpsWithFractionalTimesNestUnderTheirNamesBlocks) {
  testing::FixtureRung rung{"resnet50/b1", {{"conv1", "conv2d", "conv2d.im2col", 151234.567}}};
  const char* names[] = {"conv1", "bn1", "relu", "downsample.0", "conv2", "conv3"};
  double ns = 333.3;
  for (int layer = 1; layer <= 4; ++layer) {
    for (int block = 0; block < 3; ++block) {
      for (const char* name : names) {
        ns = std::fmod(ns * 7.77 + 0.1, 90000.0) + 0.01;
        rung.ops.push_back(
            {"layer" + std::to_string(layer) + "." + std::to_string(block) + "." + name, "conv2d",
             "conv2d.im2col", ns});
      }
    }
  }
  rung.ops.push_back({"fc", "linear", "gemm.packed", 0.3});
  const json trace = trace_of(rung);
  EXPECT_EQ(joined(nesting_failures(trace)), "");
  const auto ops = complete_events(trace);
  ASSERT_EQ(ops.size(), rung.ops.size());
  for (size_t i = 1; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i]["ts"].get<double>(),
              ops[i - 1]["ts"].get<double>() + ops[i - 1]["dur"].get<double>())
        << i;
  }
  // The cumulative rounding keeps the total within a tick of the sum of the means.
  double sum = 0;
  for (const auto& op : rung.ops) sum += op.ns;
  const json& last = ops.back();
  EXPECT_NEAR((last["ts"].get<double>() + last["dur"].get<double>()) * 1e3, sum, 1.0);
}

TEST(FlameTrace, OddHierarchiesNest) {
  const json trace = trace_of({"toy/r1",
                               {{"a.b.c", "add", "add", 10.4},
                                {"a.x", "add", "add", 0},  // a zero-time op still nests
                                {"a", "add", "add", 3.3},  // an op named like a block
                                {"a.b", "add", "add", 2.2},
                                {"a.b.d", "add", "add", 0.2},
                                {"z.q", "add", "add", 5},
                                {"a.b.e", "add", "add", 1},  // a block again, after another
                                {"..", "add", "add", 1},
                                {"a.b.c.d.e.f", "add", "add", 0}}});
  EXPECT_EQ(joined(nesting_failures(trace)), "");
  for (const json& e : complete_events(trace)) EXPECT_GT(e["dur"].get<double>(), 0) << e;
}

TEST(FlameTrace, TheNestingCheckCatchesOverlapAndFlatness) {
  // The layout this replaces: ops back to back in floating-point microseconds, no blocks.
  json flat = {
      {"traceEvents",
       {{{"name", "layer1.0.conv1"}, {"ph", "X"}, {"tid", 1}, {"ts", 0.0}, {"dur", 0.3}},
        {{"name", "layer1.0.conv2"}, {"ph", "X"}, {"tid", 1}, {"ts", 0.1 + 0.2}, {"dur", 1.0}}}}};
  EXPECT_EQ(nesting_failures(flat).size(), 2u);  // no layer1 > layer1.0 above either op
  json overlapping = {{"traceEvents",
                       {{{"name", "a"}, {"ph", "X"}, {"tid", 1}, {"ts", 0.0}, {"dur", 0.1 + 0.2}},
                        {{"name", "b"}, {"ph", "X"}, {"tid", 1}, {"ts", 0.3}, {"dur", 1.0}}}}};
  const auto failures = nesting_failures(overlapping);
  ASSERT_EQ(failures.size(), 2u);  // b overlaps a, and so nests in it
  EXPECT_NE(failures[0].find("b overlaps a"), std::string::npos) << failures[0];
}

TEST(FlameTrace, TooLongARungIsAUserError) {
  EXPECT_THROW(trace_of({"toy/r1", {{"a", "add", "add", 1e16}}}), UserError);
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
      EXPECT_EQ(events[i]["ts"].get<double>(), end) << "track " << tid << " event " << i;
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
  EXPECT_EQ(events[0]["dur"].get<double>(), 5.0 / 1024);  // 5 ns is 5.12 ticks
}

}  // namespace
}  // namespace cuvil::reports::flame
