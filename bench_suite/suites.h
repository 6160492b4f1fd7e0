// The benchmark suites: each names a workload, its rung parameters, and how to build its graph
// at a rung (real dimensions) or as a scaled-down version of the same topology (for verify).
#pragma once

#include <string>
#include <vector>

#include "bench_suite/ladder.h"
#include "passes/ir/graph.h"

namespace cuvil::bench {

struct Suite {
  std::string name;
  std::string summary;
  std::vector<std::string> rung_keys;  // parameters a rung of this suite may set
  ir::Graph (*build)(const Rung& rung, bool tiny);
  // Choice values `verify --random-configs` leaves out unless --random-exclude says otherwise:
  // dynamic per-tensor int8 exceeds its stated bound (5e-2, measured on ResNet-50) on transformer
  // blocks, and the suite's search space (configs/search/) leaves it out too.
  std::vector<std::string> random_config_exclusions = {};
};

const std::vector<Suite>& suites();
const Suite& find_suite(const std::string& name);  // UserError listing the suites if unknown

Ladder load_suite_ladder(const Suite& suite);  // configs/ladders/<suite>.yaml
std::string default_config_path(const Suite& suite, const std::string& target);

}  // namespace cuvil::bench
