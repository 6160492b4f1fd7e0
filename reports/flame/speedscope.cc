#include "reports/flame/speedscope.h"

#include <unordered_map>
#include <utility>
#include <vector>

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

  // Every stack below `root`, depth first, from an explicit stack (trees may be thousands of
  // frames deep).
  void walk(const FrameNode& root) {
    std::vector<std::pair<const FrameNode*, size_t>> pending;  // a node and its depth
    for (auto c = root.children.rbegin(); c != root.children.rend(); ++c) {
      pending.emplace_back(c->get(), 0);
    }
    while (!pending.empty()) {
      const auto [node, depth] = pending.back();
      pending.pop_back();
      stack.resize(depth);
      stack.push_back(index_of(node->name));
      if (node->self > 0) {
        samples.push_back(stack);
        weights.push_back(node->self);
      }
      for (auto c = node->children.rbegin(); c != node->children.rend(); ++c) {
        pending.emplace_back(c->get(), depth + 1);
      }
    }
  }
};

}  // namespace

json to_speedscope(const FrameTree& tree, const std::string& name) {
  SampleWriter w;
  w.walk(tree.root());
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
