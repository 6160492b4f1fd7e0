// The graph verifier (verifier.cc).
#pragma once

#include "passes/ir/graph.h"

namespace cuvil::ir {

// Checks structure: ids in range, single assignment, topological order, shapes consistent with
// inference, outputs present. Throws UserError with the first problem found.
void verify(const Graph& graph);

}  // namespace cuvil::ir
