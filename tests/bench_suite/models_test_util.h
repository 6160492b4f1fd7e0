// Small helpers shared by the model builder tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "passes/ir/graph.h"
#include "runtime/reference/interpreter.h"

namespace cuvil::bench::models::testing {

inline ir::ValueId find_value(const ir::Graph& graph, const std::string& name) {
  for (ir::ValueId id = 0; id < graph.value_count(); ++id) {
    if (graph.value(id).name == name) return id;
  }
  return ir::kNoValue;
}

inline const ir::Node* find_node(const ir::Graph& graph, const std::string& name) {
  for (const ir::Node& node : graph.nodes()) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

inline bool any_constant_materialised(const ir::Graph& graph) {
  for (ir::ValueId id : graph.constants()) {
    if (graph.value(id).data) return true;
  }
  return false;
}

inline int count_nodes_ending_with(const ir::Graph& graph, const std::string& suffix) {
  int n = 0;
  for (const ir::Node& node : graph.nodes()) {
    if (node.name.size() >= suffix.size() &&
        node.name.compare(node.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      ++n;
    }
  }
  return n;
}

struct Magnitude {
  bool finite = true;
  double max_abs = 0.0;
  double rms = 0.0;
};

inline Magnitude magnitude(const ir::Tensor& t) {
  Magnitude m;
  double sum_sq = 0.0;
  for (float x : t.data) {
    if (!std::isfinite(x)) m.finite = false;
    m.max_abs = std::max(m.max_abs, static_cast<double>(std::fabs(x)));
    sum_sq += static_cast<double>(x) * x;
  }
  m.rms = t.data.empty() ? 0.0 : std::sqrt(sum_sq / static_cast<double>(t.data.size()));
  return m;
}

// Activations of a sane net with O(1) inputs stay O(1): finite, bounded, not collapsed to 0.
inline void expect_sane(const ir::Tensor& t) {
  const Magnitude m = magnitude(t);
  EXPECT_TRUE(m.finite);
  EXPECT_LT(m.max_abs, 1e3);
  EXPECT_GT(m.rms, 1e-2);
}

}  // namespace cuvil::bench::models::testing
