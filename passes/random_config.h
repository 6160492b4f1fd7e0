// Configurations drawn at random from the pass registry: for property tests and for
// `cuvil-bench verify --random-configs`. Every registered knob is reachable.
#pragma once

#include <cstdint>
#include <string>

#include "passes/cuvilpass.h"

namespace cuvil::passes {

// Each registered pass is on with probability 1/2 (kept in registry order); each parameter is
// drawn uniformly from its range (log-uniformly where the spec says log scale), each choice and
// bool with equal odds. Deterministic in seed.
PipelineConfig random_pipeline(const std::string& target, uint64_t seed);

}  // namespace cuvil::passes
