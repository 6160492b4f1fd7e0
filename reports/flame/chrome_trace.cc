#include "reports/flame/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.h"

namespace cuvil::reports::flame {

namespace {

using nlohmann::json;

constexpr int kPid = 1;
// Integers up to 2^53 are exact in a double, and so are their multiples of 2^-10.
constexpr double kMaxTicks = 9007199254740992.0;

json metadata(const char* what, int tid, const json& args) {
  return {{"name", what}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", args}};
}

double microseconds(int64_t ticks) {
  return static_cast<double>(ticks) / static_cast<double>(kTraceTicksPerMicrosecond);
}

json complete_event(const std::string& name, const std::string& cat, int tid, int64_t start,
                    int64_t end, json args) {
  return {{"name", name},
          {"cat", cat},
          {"ph", "X"},
          {"ts", microseconds(start)},
          {"dur", microseconds(end - start)},
          {"pid", kPid},
          {"tid", tid},
          {"args", std::move(args)}};
}

struct OpenBlock {
  std::string name;
  int64_t start = 0;
  size_t event = 0;  // index of its placeholder in the event list
  int64_t ops = 0;
};

}  // namespace

json to_chrome_trace(const std::vector<RungOps>& rungs, const std::string& process_name) {
  json events = json::array();
  events.push_back(metadata("process_name", 0, {{"name", process_name}}));
  for (size_t r = 0; r < rungs.size(); ++r) {
    const RungOps& rung = rungs[r];
    const int tid = static_cast<int>(r) + 1;
    events.push_back(metadata("thread_name", tid, {{"name", rung.name}}));
    events.push_back(metadata("thread_sort_index", tid, {{"sort_index", tid}}));
    std::vector<OpenBlock> open;
    const auto close_to = [&](size_t depth, int64_t at) {
      while (open.size() > depth) {
        OpenBlock& b = open.back();
        events[b.event] =
            complete_event(b.name, "block", tid, b.start, at, {{"block", b.name}, {"ops", b.ops}});
        open.pop_back();
      }
    };
    // Positions are the cumulative sum of the means in ns, rounded once to the tick: rounding
    // errors do not accumulate and each op starts at exactly the tick the last one ended.
    double sum_ns = 0;
    int64_t at = 0;
    for (const OpRecord& op : rung.records) {
      const std::vector<std::string> blocks = node_blocks(op.node);
      size_t shared = 0;
      while (shared < open.size() && shared < blocks.size() &&
             open[shared].name == blocks[shared]) {
        ++shared;
      }
      close_to(shared, at);
      for (size_t b = shared; b < blocks.size(); ++b) {
        open.push_back({blocks[b], at, events.size(), 0});
        events.push_back(nullptr);  // written when the block closes
      }
      for (OpenBlock& b : open) ++b.ops;

      sum_ns += op.ns_per_iteration;
      const double end_ticks =
          std::round(sum_ns * static_cast<double>(kTraceTicksPerMicrosecond) / 1e3);
      if (!(end_ticks < kMaxTicks)) {
        throw UserError(rung.name +
                        ": the per-op times add up beyond what a trace holds exactly (" +
                        std::to_string(sum_ns) + " ns)");
      }
      const int64_t end = std::max(at + 1, static_cast<int64_t>(end_ticks));
      json args = {{"step", op.step},
                   {"node", op.node},
                   {"op", op.op},
                   {"kernel", op.kernel},
                   {"lowering", op.lowering},
                   {"flops", op.flops},
                   {"bytes", op.bytes},
                   {"ns_per_iteration", op.ns_per_iteration},
                   {"ns_min", op.ns_min},
                   {"ns_median", op.ns_median},
                   {"gflops", op.gflops}};
      events.push_back(complete_event(op.node, op.op, tid, at, end, std::move(args)));
      at = end;
    }
    close_to(0, at);
  }
  json other = json::object();
  for (const RungOps& rung : rungs) {
    other[rung.name] = {{"iterations", rung.iterations},
                        {"total_ns_per_iteration", rung.total_ns_per_iteration},
                        {"measured_ns_per_iteration", rung.measured_ns_per_iteration}};
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"generator", "cuvil-bench report flame"},
            {"layout",
             "ops back to back in step order, mean time per iteration; blocks of node names "
             "(layer1 > layer1.0 > op) span their ops"},
            {"time_resolution", "ts and dur in microseconds, exact multiples of 1/1024 us"},
            {"rungs", std::move(other)}}}};
}

}  // namespace cuvil::reports::flame
