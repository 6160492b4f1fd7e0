// Lowering: an optimised graph becomes a runtime Plan. Intermediates take the arena offsets that
// memory planning assigned (Value::arena_offset); without them each gets its own region. Each
// node's kernel comes from the runtime's kernel table; a node attribute "impl" selects a
// variant.
#pragma once

#include "passes/ir/graph.h"
#include "runtime/plan.h"

namespace cuvil::passes {

struct LowerOptions {
  int threads = 1;
};

runtime::Plan lower(const ir::Graph& graph, const LowerOptions& options);

}  // namespace cuvil::passes
