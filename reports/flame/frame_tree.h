// A frame tree: the data behind every flame-graph view. Each node is one frame on one call path
// (suite/rung → block → op → kernel, or a sampled stack frame), weighted by what it costs on its
// own (self) and with everything above it (total). Children keep first-seen order, so a tree
// built from per-op records reads in step order.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cuvil::reports::flame {

// Every walk over a tree (building, writing, destroying) is iterative: a stack as deep as a
// tree is only ever in memory, never on the call stack.
struct FrameNode {
  FrameNode() = default;
  FrameNode(FrameNode&&) = default;
  FrameNode& operator=(FrameNode&&) = default;
  ~FrameNode();  // iterative: destroying a deep chain must not recurse once per level

  std::string name;
  double self = 0;   // weight of stacks that end in this frame
  double total = 0;  // self plus every descendant's self
  // Differential trees only: the same path's total in the base run (0 when the path is new).
  double base_total = 0;
  bool in_base = false;
  std::vector<std::unique_ptr<FrameNode>> children;

  FrameNode* child(const std::string& child_name) const;
  FrameNode& child_or_add(const std::string& child_name);

 private:
  std::unordered_map<std::string, FrameNode*> index_;
};

class FrameTree {
 public:
  // `root_name` is the bottom frame ("all" in flamegraph.pl); `unit` names what weights count
  // ("nanoseconds" for per-op records, "samples" for native samples).
  explicit FrameTree(std::string root_name = "all", std::string unit = "nanoseconds");

  // Adds `weight` to the stack `path` (root excluded, outermost frame first). A non-finite or
  // negative weight is an internal error: readers validate their input.
  void add_stack(const std::vector<std::string>& path, double weight);

  const FrameNode& root() const { return root_; }
  const std::string& unit() const { return unit_; }
  double total() const { return root_.total; }
  bool empty() const { return root_.children.empty(); }
  // The deepest stack, in frames below the root (0 for an empty tree).
  size_t depth() const;
  // The node at `path` (root excluded), or nullptr.
  const FrameNode* find(const std::vector<std::string>& path) const;
  // True once annotate_with_base ran: the tree is a differential one.
  bool differential() const { return differential_; }
  const std::string& base_unit() const { return base_unit_; }

  // Marks every node with the base tree's total on the same path (matched by names from the
  // root), making this a differential tree; frames only in the base are reported by
  // `total_only_in_base`. Base weights are multiplied by `base_scale` (sample counts from runs
  // of different lengths compare as shares: scale = this total / base total).
  void annotate_with_base(const FrameTree& base, double base_scale = 1.0);
  // The base run's weight on paths this tree lacks (what disappeared).
  double total_only_in_base() const { return only_in_base_; }

 private:
  FrameNode root_;
  std::string unit_;
  bool differential_ = false;
  std::string base_unit_;
  double only_in_base_ = 0;
};

// Visits every node depth first (parents before children, children in order) with its path
// depth (root = 0), without recursion.
template <typename Visit>
void visit_frames(const FrameNode& node, Visit&& visit) {
  std::vector<std::pair<const FrameNode*, size_t>> pending{{&node, 0}};
  while (!pending.empty()) {
    const auto [n, level] = pending.back();
    pending.pop_back();
    visit(*n, level);
    for (auto c = n->children.rbegin(); c != n->children.rend(); ++c) {
      pending.emplace_back(c->get(), level + 1);
    }
  }
}

}  // namespace cuvil::reports::flame
