// Lowering: an optimised graph becomes a runtime Plan. Intermediates take the arena offsets that
// memory planning assigned (Value::arena_offset); without them each gets its own region. Each
// node's kernel comes from the runtime's kernel table; a node attribute "impl" selects a
// variant.
#pragma once

#include <string>

#include "passes/ir/graph.h"
#include "runtime/plan.h"

namespace cuvil::passes {

struct LowerOptions {
  int threads = 1;
  // "cuda": steps keep their node attributes for the CUDA runtime (runtime/cuda/kernel_choice.h)
  // and get no CPU kernel (Step::fn stays null, nothing is prepared on the host).
  std::string target = "cpu";
  // A constant whose every reader replaced it by its prepared form (packed, transformed:
  // runtime::KernelInfo::replaced_inputs) is released from the plan (a null Plan::constants
  // entry) once its last reader prepared.
  bool release_replaced_constants = true;
};

// The plan still shares the graph's constants: the graph keeps those the plan released.
runtime::Plan lower(const ir::Graph& graph, const LowerOptions& options);
// The same, and `graph` lets go of the constants the plan released, as it goes (values made
// from their initialiser are made again on demand; others can no longer be read from it), and
// of constants no step reads: the peak holds one original weight beside the prepared ones.
runtime::Plan lower_releasing(ir::Graph& graph, const LowerOptions& options);

// What a kernel sees of `node` at lowering (shapes, attributes, epilogue), without operands:
// for supports() checks and schedule resolution before a plan exists.
runtime::Step probe_step(const ir::Graph& graph, const ir::Node& node);

}  // namespace cuvil::passes
