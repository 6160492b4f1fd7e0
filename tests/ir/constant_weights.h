// Constant inputs for the IR tests' graphs, where only their shapes matter.
#pragma once

#include <string>
#include <utility>

#include "passes/ir/graph.h"

namespace cuvil::ir::testing {

// A constant of `s` filled with ones, named after the graph's value count (so names are unique).
inline ValueId weight(Graph& g, Shape s) {
  std::string name = "w";
  name += std::to_string(g.value_count());
  return g.add_constant(name, std::move(s), ConstantInit::fill(1.0f));
}

}  // namespace cuvil::ir::testing
