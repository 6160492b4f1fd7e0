// speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json): one
// "sampled" profile whose samples are the tree's stacks with self weight, in depth-first order
// (so speedscope's time-order view follows step order for per-op trees).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "reports/flame/frame_tree.h"

namespace cuvil::reports::flame {

inline constexpr const char* kSpeedscopeSchema =
    "https://www.speedscope.app/file-format-schema.json";

// `name` names the profile (and the file's profile group). The root frame is left out: speedscope
// draws the total itself. Weights are in the tree's unit ("nanoseconds", or "none" for samples).
nlohmann::json to_speedscope(const FrameTree& tree, const std::string& name);

}  // namespace cuvil::reports::flame
