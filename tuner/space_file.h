// Search-space files (configs/search/<suite>.yaml): narrow or fix what the registry offers.
//
//   suite: resnet50                 # optional; must match --suite when given
//   passes:
//     fold-batchnorm: { enabled: true }          # true | false | tune (the default)
//     attention-tiling: { freeze: true }         # on, every parameter at its default
//     memory-plan:
//       params:
//         strategy: { choices: [greedy-by-size, first-fit] }   # a subset
//         alignment: { min: 16, max: 1024, power_of_two: true }
//     gemm-tiling:
//       params:
//         mc: { multiple_of: mr, factor_min: 1, factor_max: 32 }  # mc = k * mr, k sampled
//         kc: { fixed: 256 }
//
// Parameter keys: fixed, min, max, log, step, choices, power_of_two, multiple_of, factor_min,
// factor_max. Ranges may only narrow the registry's. Every problem is a UserError
// "FILE:LINE: FIELD: message".
#pragma once

#include <string>

#include "tuner/search_space.h"

namespace cuvil::tuner {

void narrow_space(SearchSpace& space, const std::string& yaml_text, const std::string& source,
                  const std::string& suite);
void load_space_file(SearchSpace& space, const std::string& path, const std::string& suite);
// configs/search/<suite>.yaml when it exists, else "".
std::string default_space_file(const std::string& config_dir, const std::string& suite);

}  // namespace cuvil::tuner
