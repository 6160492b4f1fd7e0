// Running a configured pipeline over a graph and lowering the result: the one compile path that
// verify, run and tune all use.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "passes/cuvilpass.h"
#include "passes/ir/graph.h"
#include "runtime/plan.h"

namespace cuvil::passes {

// Told each stage's name as it starts ("pass NAME", then "lowering"), for progress lines.
using StageFn = std::function<void(const std::string& stage)>;

// Runs the config's passes in order, verifying the graph after each (a pass that breaks the
// graph is an internal error naming the pass).
void run_pipeline(ir::Graph& graph, const PipelineConfig& config, const StageFn& on_stage = {});

struct Compiled {
  // After the passes. Constants the plan replaced by prepared forms are released from it
  // (passes::lower_releasing): those made from an initialiser are made again if read.
  ir::Graph graph;
  runtime::Plan plan;
};

// What a pipeline chose for each node of a graph that depends on its size: the kernel ("impl")
// and the kernel's resolved automatic schedule (KernelInfo::pin), by node name. Resolved on the
// graph that is measured and pinned onto a scaled-down copy of it (same topology, same names),
// they make verification run the kernels the measurement runs.
struct Pins {
  std::map<std::string, ir::Attrs> by_node;
};
// Runs the config's passes on a copy of `measured` and reads off its choices (CPU target).
Pins resolve_pins(const ir::Graph& measured, const PipelineConfig& config, int threads);

// With `pins`, nodes named there take the pinned attributes after the passes ran, where the
// pinned kernel can run them (a pin a node cannot take is left out and counted in the graph's
// annotation "pins.refused"; "pins.applied" counts the nodes pinned).
Compiled compile(ir::Graph graph, const PipelineConfig& config, int threads,
                 const Pins* pins = nullptr, const StageFn& on_stage = {});

}  // namespace cuvil::passes
