// Running a configured pipeline over a graph and lowering the result: the one compile path that
// verify, run and tune all use.
#pragma once

#include "passes/cuvilpass.h"
#include "passes/ir/graph.h"
#include "runtime/plan.h"

namespace cuvil::passes {

// Runs the config's passes in order, verifying the graph after each (a pass that breaks the
// graph is an internal error naming the pass).
void run_pipeline(ir::Graph& graph, const PipelineConfig& config);

struct Compiled {
  ir::Graph graph;  // after the passes
  runtime::Plan plan;
};

Compiled compile(ir::Graph graph, const PipelineConfig& config, int threads);

}  // namespace cuvil::passes
