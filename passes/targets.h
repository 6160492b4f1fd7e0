// The targets a pipeline can be built for. The one list that the CLI's --target, the .cuvilpass
// loader, the registry's messages and the passes that apply to every target all read.
#pragma once

#include <algorithm>
#include <iterator>
#include <string_view>

namespace cuvil::passes {

inline constexpr std::string_view kTargets[] = {"cpu", "cuda"};

inline bool is_known_target(std::string_view target) {
  return std::find(std::begin(kTargets), std::end(kTargets), target) != std::end(kTargets);
}

}  // namespace cuvil::passes
