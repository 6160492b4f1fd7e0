// memory-plan: assigns every intermediate a byte offset in one activation arena, reusing memory
// between values whose live ranges do not overlap.
#pragma once

#include "passes/pass.h"
#include "passes/targets.h"

namespace cuvil::passes {

// Graph::annotation_origins key: the parameters that placed the intermediates in the arena.
inline constexpr const char* kArenaAnnotation = "memory-plan.arena";

class MemoryPlanPass final : public Pass {
 public:
  std::string_view name() const override { return "memory-plan"; }
  std::string_view summary() const override {
    return "place intermediates in one arena, sharing memory between values never live together";
  }
  bool applies_to(std::string_view target) const override { return is_known_target(target); }
  std::vector<ParamSpec> params() const override;
  void run(ir::Graph& graph, const ParamMap& params) const override;
};

}  // namespace cuvil::passes
