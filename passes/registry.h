// The one table of passes. Names are written here once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "passes/pass.h"

namespace cuvil::passes {

// Every registered pass, in the order a full default pipeline runs them.
const std::vector<std::unique_ptr<Pass>>& pass_registry();
const Pass* find_pass(std::string_view name);  // nullptr when unknown
// The targets a pass applies to, for messages: "cpu", "cuda" or "cpu, cuda".
std::string applicable_targets(const Pass& pass);

}  // namespace cuvil::passes
