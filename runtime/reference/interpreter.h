// The reference interpreter: obviously-correct kernels for every op, fp32 storage and fp64
// accumulation. It reads the IR directly and is the oracle every pass and kernel is tested
// against. It is slow on purpose; never tune it.
#pragma once

#include <vector>

#include "passes/ir/graph.h"

namespace cuvil::runtime::reference {

// Inputs and outputs in the graph's order. Inputs with the wrong shape throw UserError.
std::vector<ir::Tensor> interpret(const ir::Graph& graph, const std::vector<ir::Tensor>& inputs);

}  // namespace cuvil::runtime::reference
