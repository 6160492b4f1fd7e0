// Configurations drawn at random from the pass registry: for property tests and for
// `cuvil-bench verify --random-configs`. Every registered knob is reachable.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "passes/cuvilpass.h"
#include "passes/pass.h"

namespace cuvil::passes {

// Each registered pass is on with probability 1/2 (kept in registry order); each parameter is
// drawn uniformly from its range (log-uniformly where the spec says log scale), each choice and
// bool with equal odds. Choice values listed in `excluded_choices` (e.g. "int8") are never
// drawn where another choice remains. Deterministic in seed.
PipelineConfig random_pipeline(const std::string& target, uint64_t seed,
                               const std::set<std::string>& excluded_choices = {});

// Every parameter of `pass` drawn as random_pipeline draws it: for a pass's own property test.
ParamMap random_params(const Pass& pass, uint64_t seed);

}  // namespace cuvil::passes
