#include "reports/flame/chrome_trace.h"

namespace cuvil::reports::flame {

namespace {

using nlohmann::json;

constexpr int kPid = 1;

json metadata(const char* what, int tid, const json& args) {
  return {{"name", what}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", args}};
}

}  // namespace

json to_chrome_trace(const std::vector<RungOps>& rungs, const std::string& process_name) {
  json events = json::array();
  events.push_back(metadata("process_name", 0, {{"name", process_name}}));
  for (size_t r = 0; r < rungs.size(); ++r) {
    const RungOps& rung = rungs[r];
    const int tid = static_cast<int>(r) + 1;
    events.push_back(metadata("thread_name", tid, {{"name", rung.name}}));
    events.push_back(metadata("thread_sort_index", tid, {{"sort_index", tid}}));
    // Positions accumulate in ns and convert once, so an op starts exactly where the last ended.
    double at_ns = 0;
    for (const OpRecord& op : rung.records) {
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
      events.push_back({{"name", op.node},
                        {"cat", op.op},
                        {"ph", "X"},
                        {"ts", at_ns / 1e3},
                        {"dur", op.ns_per_iteration / 1e3},
                        {"pid", kPid},
                        {"tid", tid},
                        {"args", std::move(args)}});
      at_ns += op.ns_per_iteration;
    }
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
            {"layout", "ops back to back in step order, mean time per iteration"},
            {"rungs", std::move(other)}}}};
}

}  // namespace cuvil::reports::flame
