// The pruned search space cuvil-tune-gen writes for a second, cheaper study (--write-space).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tuner/importance.h"
#include "tuner/search_space.h"

namespace cuvil::tuner {

// The pruned search space (YAML text, the configs/search format): parameters whose share of
// importance is at least `threshold` keep their ranges from `space` (the study's space); every
// other one, and every pass switch below it, is fixed at its value in `values` (tune-gen passes
// the best trial's values).
std::string pruned_space_yaml(const std::string& suite, const SearchSpace& space,
                              const nlohmann::json& values, const ImportanceReport& importance,
                              double threshold);

}  // namespace cuvil::tuner
