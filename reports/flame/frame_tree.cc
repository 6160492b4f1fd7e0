#include "reports/flame/frame_tree.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "base/error.h"

namespace cuvil::reports::flame {

FrameNode::~FrameNode() {
  // Children are taken over before their node dies, so no destructor below runs with any.
  std::vector<std::unique_ptr<FrameNode>> pending = std::move(children);
  while (!pending.empty()) {
    std::unique_ptr<FrameNode> node = std::move(pending.back());
    pending.pop_back();
    for (auto& c : node->children) pending.push_back(std::move(c));
    node->children.clear();
  }
}

FrameNode* FrameNode::child(const std::string& child_name) const {
  const auto it = index_.find(child_name);
  return it == index_.end() ? nullptr : it->second;
}

FrameNode& FrameNode::child_or_add(const std::string& child_name) {
  if (FrameNode* existing = child(child_name)) return *existing;
  children.push_back(std::make_unique<FrameNode>());
  FrameNode& added = *children.back();
  added.name = child_name;
  index_.emplace(child_name, &added);
  return added;
}

FrameTree::FrameTree(std::string root_name, std::string unit) : unit_(std::move(unit)) {
  root_.name = std::move(root_name);
}

void FrameTree::add_stack(const std::vector<std::string>& path, double weight) {
  CUVIL_CHECK(std::isfinite(weight) && weight >= 0, "frame weights are finite and >= 0");
  FrameNode* node = &root_;
  node->total += weight;
  for (const std::string& frame : path) {
    node = &node->child_or_add(frame);
    node->total += weight;
  }
  node->self += weight;
}

size_t FrameTree::depth() const {
  size_t deepest = 0;
  visit_frames(root_, [&](const FrameNode&, size_t level) { deepest = std::max(deepest, level); });
  return deepest;
}

const FrameNode* FrameTree::find(const std::vector<std::string>& path) const {
  const FrameNode* node = &root_;
  for (const std::string& frame : path) {
    node = node->child(frame);
    if (!node) return nullptr;
  }
  return node;
}

namespace {

// Marks `node`'s subtree with the totals of `base`'s matching subtree (nullptr: none matches).
void mark(FrameNode& node, const FrameNode* base, double scale, double* only_in_base) {
  std::vector<std::pair<FrameNode*, const FrameNode*>> pending{{&node, base}};
  while (!pending.empty()) {
    const auto [n, b] = pending.back();
    pending.pop_back();
    n->in_base = b != nullptr;
    n->base_total = b ? b->total * scale : 0;
    for (auto c = n->children.rbegin(); c != n->children.rend(); ++c) {
      pending.emplace_back(c->get(), b ? b->child((*c)->name) : nullptr);
    }
    if (!b) continue;
    for (const auto& bc : b->children) {
      if (!n->child(bc->name)) *only_in_base += bc->total * scale;
    }
  }
}

}  // namespace

void FrameTree::annotate_with_base(const FrameTree& base, double base_scale) {
  CUVIL_CHECK(std::isfinite(base_scale) && base_scale > 0, "base scale is positive");
  only_in_base_ = 0;
  mark(root_, &base.root_, base_scale, &only_in_base_);
  differential_ = true;
  base_unit_ = base.unit_;
}

}  // namespace cuvil::reports::flame
