#include "runtime/cuda/capture_plan.h"

#include <algorithm>

#include "base/error.h"
#include "runtime/cuda/attrs.h"

namespace cuvil::runtime::cuda {

std::string_view to_string(CaptureMode mode) {
  switch (mode) {
    case CaptureMode::whole:
      return "whole";
    case CaptureMode::segments:
      return "segments";
    case CaptureMode::off:
      return "off";
  }
  return "?";
}

CaptureSettings capture_settings(const Plan& plan) {
  CaptureSettings s;
  if (plan.steps.empty()) return s;
  const ir::Attrs& a = plan.settings;
  const std::string mode = a.get_string(attrs::kCapture, "off");
  if (mode == "whole") {
    s.mode = CaptureMode::whole;
  } else if (mode == "segments") {
    s.mode = CaptureMode::segments;
  } else if (mode == "off") {
    s.mode = CaptureMode::off;
  } else {
    throw UserError("cuda_graph.capture: unknown mode '" + mode +
                    "' (expected whole, segments or off)");
  }
  s.segment_steps = a.get_int(attrs::kSegmentSteps, 64);
  if (s.segment_steps < 1) {
    throw UserError("cuda_graph.segment_steps must be at least 1, got " +
                    std::to_string(s.segment_steps));
  }
  return s;
}

std::vector<CaptureSegment> plan_capture(size_t step_count, const CaptureSettings& settings,
                                         const std::vector<std::string>& blockers) {
  CUVIL_CHECK(blockers.empty() || blockers.size() == step_count, "one blocker slot per step");
  std::vector<CaptureSegment> out;
  if (step_count == 0) return out;
  if (settings.mode == CaptureMode::off) {
    out.push_back({0, step_count, false, "capture off (cuda-graph pass absent or capture: off)"});
    return out;
  }
  const size_t limit = settings.mode == CaptureMode::whole
                           ? step_count
                           : static_cast<size_t>(std::max<int64_t>(1, settings.segment_steps));
  size_t begin = 0;
  auto flush = [&](size_t end) {
    while (begin < end) {
      const size_t stop = std::min(end, begin + limit);
      out.push_back({begin, stop, true, ""});
      begin = stop;
    }
  };
  for (size_t i = 0; i < step_count; ++i) {
    if (blockers.empty() || blockers[i].empty()) continue;
    flush(i);
    out.push_back({i, i + 1, false, blockers[i]});
    begin = i + 1;
  }
  flush(step_count);
  return out;
}

std::string describe(const std::vector<CaptureSegment>& segments, const Plan& plan) {
  size_t graphs = 0, captured_steps = 0;
  std::string stream;
  for (const CaptureSegment& s : segments) {
    if (s.captured) {
      ++graphs;
      captured_steps += s.end - s.begin;
      continue;
    }
    const std::string node =
        s.begin < plan.steps.size() ? plan.steps[s.begin].node_name : std::string("?");
    stream += "; stream: steps " + std::to_string(s.begin) + "-" + std::to_string(s.end - 1) +
              " (from node '" + node + "': " + s.reason + ")";
  }
  return std::to_string(graphs) + " graph(s) over " + std::to_string(captured_steps) + " of " +
         std::to_string(plan.steps.size()) + " steps" + stream;
}

}  // namespace cuvil::runtime::cuda
