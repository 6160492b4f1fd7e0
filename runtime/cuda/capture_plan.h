// CUDA Graph capture boundaries: which runs of steps are captured into one graph (replayed with
// one launch) and which run as plain stream launches, with the reason for each uncaptured run.
// Pure host logic; the GPU executor captures what this decides and demotes a segment whose
// capture fails at run time (recording the CUDA error as its reason).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/plan.h"

namespace cuvil::runtime::cuda {

enum class CaptureMode : uint8_t { whole, segments, off };
std::string_view to_string(CaptureMode mode);

struct CaptureSettings {
  CaptureMode mode = CaptureMode::off;
  int64_t segment_steps = 64;  // segments mode: at most this many steps per graph
};

// From the steps' "cuda_graph.*" attributes (the cuda-graph pass sets them on every node; a plan
// without them runs uncaptured). UserError on an unknown mode or a segment size below 1.
CaptureSettings capture_settings(const Plan& plan);

struct CaptureSegment {
  size_t begin = 0, end = 0;  // steps [begin, end)
  bool captured = false;
  std::string reason;  // why not captured (empty when captured)
};

// `blockers[i]` non-empty: step i cannot be captured, for that reason; it runs on the stream in a
// segment of its own and the steps around it are captured separately. Segments cover every step
// exactly once, in order.
std::vector<CaptureSegment> plan_capture(size_t step_count, const CaptureSettings& settings,
                                         const std::vector<std::string>& blockers);

// "3 graph(s) over 120 steps; stream: steps 40-40 (node 'x': reason)" for logs.
std::string describe(const std::vector<CaptureSegment>& segments, const Plan& plan);

}  // namespace cuvil::runtime::cuda
