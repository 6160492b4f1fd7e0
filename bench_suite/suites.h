// The benchmark suites: each names a workload, its rung parameters, and how to build its graph
// at a rung (real dimensions) or as a scaled-down version of the same topology (for verify).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench_suite/ladder.h"
#include "passes/ir/graph.h"

namespace cuvil::bench {

struct Suite {
  std::string name;
  std::string summary;
  std::vector<std::string> rung_keys;  // parameters a rung of this suite may set
  std::function<ir::Graph(const Rung& rung, bool tiny)> build;
  // Choice values `verify --random-configs` leaves out unless --random-exclude says otherwise:
  // dynamic per-tensor int8 exceeds its stated bound (5e-2, measured on ResNet-50) on transformer
  // blocks, and the suite's search space (configs/search/) leaves it out too.
  std::vector<std::string> random_config_exclusions = {};
  // The default pipeline is configs/<config_name>.<target>.cuvilpass (empty: the suite's name).
  std::string config_name = {};
  // Imported models (bench_suite/workload.h): the file and its sha256; empty for built-ins.
  std::string model_path = {};
  std::string model_sha256 = {};
};

const std::vector<Suite>& suites();
const Suite& find_suite(const std::string& name);  // UserError listing the suites if unknown

Ladder load_suite_ladder(const Suite& suite);  // configs/ladders/<suite>.yaml
std::string default_config_path(const Suite& suite, const std::string& target);
// The pipeline of an optimisation level: O2 is the suite's default config, O0, O1 and O3 are
// configs/opt/<level>.<target>.cuvilpass (the same for every suite and model).
inline const std::vector<std::string> kOptLevels = {"O0", "O1", "O2", "O3"};
std::string opt_level_config_path(const Suite& suite, const std::string& target,
                                  const std::string& level);

// The name its default configs go by: configs/<name>.<target>.cuvilpass and
// configs/search/<name>.yaml ("model" for every imported model).
const std::string& config_name_of(const Suite& suite);

}  // namespace cuvil::bench
