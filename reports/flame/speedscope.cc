#include "reports/flame/speedscope.h"

#include <unordered_map>

namespace cuvil::reports::flame {

namespace {

using nlohmann::json;

struct SampleWriter {
  json frames = json::array();
  json samples = json::array();
  json weights = json::array();
  std::unordered_map<std::string, size_t> frame_index;
  std::vector<size_t> stack;

  size_t index_of(const std::string& name) {
    const auto [it, added] = frame_index.emplace(name, frame_index.size());
    if (added) frames.push_back({{"name", name}});
    return it->second;
  }

  void walk(const FrameNode& node) {
    stack.push_back(index_of(node.name));
    if (node.self > 0) {
      samples.push_back(stack);
      weights.push_back(node.self);
    }
    for (const auto& c : node.children) walk(*c);
    stack.pop_back();
  }
};

}  // namespace

json to_speedscope(const FrameTree& tree, const std::string& name) {
  SampleWriter w;
  for (const auto& c : tree.root().children) w.walk(*c);
  const std::string unit = tree.unit() == "nanoseconds" ? "nanoseconds" : "none";
  json profile = {{"type", "sampled"},
                  {"name", name},
                  {"unit", unit},
                  {"startValue", 0},
                  {"endValue", tree.total()},
                  {"samples", std::move(w.samples)},
                  {"weights", std::move(w.weights)}};
  return {{"$schema", kSpeedscopeSchema},
          {"shared", {{"frames", std::move(w.frames)}}},
          {"profiles", json::array({std::move(profile)})},
          {"name", name},
          {"activeProfileIndex", 0},
          {"exporter", "cuvil-bench report flame"}};
}

}  // namespace cuvil::reports::flame
