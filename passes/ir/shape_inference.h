// Shape, dtype and layout inference, one rule per op (shape_inference.cc; see op.h for each op's
// contract).
#pragma once

#include "passes/ir/graph.h"

namespace cuvil::ir {

// Infers node.output's shape, dtype and layout from its inputs and attributes; throws UserError
// naming the node on bad operands.
void infer_node(const Graph& graph, const Node& node, Value* out);

}  // namespace cuvil::ir
