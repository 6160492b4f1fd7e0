// Helpers for the lowering tests: compile a graph with passes::lower, run it on the CPU
// executor and compare with the reference interpreter.
#pragma once

#include <algorithm>
#include <cstdint>

#include "passes/ir/graph.h"
#include "passes/lower.h"
#include "runtime/executor.h"
#include "runtime/reference/interpreter.h"

namespace cuvil::passes::testing {

// Worst relative error of the compiled graph's outputs against the reference interpreter.
inline double compiled_error(const ir::Graph& graph, int threads, uint64_t seed = 11) {
  const auto inputs = ir::random_inputs(graph, seed);
  const auto want = runtime::reference::interpret(graph, inputs);
  runtime::Executor executor(lower(graph, {threads}));
  const auto got = executor.run(inputs);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, ir::max_relative_error(got[i], want[i]));
  }
  return worst;
}

}  // namespace cuvil::passes::testing
