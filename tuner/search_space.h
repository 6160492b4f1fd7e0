// The tuner's search space: one dimension per pass (on/off) and per pass parameter (present only
// while its pass is on). Derived from the pass registry, then narrowed or fixed by a
// configs/search/<suite>.yaml file (space_file.h). Constraints live in the space: a power-of-two
// parameter is sampled as its exponent, a "multiple of another parameter" as the multiplier, so
// no trial fails for breaking them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "passes/cuvilpass.h"
#include "passes/pass.h"

namespace cuvil::tuner {

// A pass as the tuner sees it: what the registry offers (tests pass made-up lists).
struct PassSchema {
  std::string name;
  std::vector<passes::ParamSpec> params;
  bool tuned = true;  // false: on, at its defaults, unless a space file opens it
};

struct Dimension {
  enum class Kind : uint8_t { boolean, integer, real, choice };
  std::string name;   // "layout" (the pass switch) or "layout.memory_layout"
  std::string pass;   // owning pass
  std::string param;  // empty for the pass switch
  Kind kind = Kind::boolean;
  int64_t int_min = 0, int_max = 0, step = 1;
  double real_min = 0, real_max = 0;
  bool log_scale = false;
  std::vector<std::string> choices;
  // Constraints, sampled in a transformed space by the Optuna side:
  bool power_of_two = false;  // sample e, value = 2^e
  std::string multiple_of;    // another integer dimension's name: sample k, value = k * base
  int64_t factor_min = 1, factor_max = 1;
  std::optional<passes::ParamValue> fixed;  // not searched: always this value
  passes::ParamValue default_value;
  std::string condition;  // a boolean dimension (the pass switch) that must be true
  bool is_switch() const { return param.empty(); }
};

struct SearchSpace {
  std::string target = "cpu";
  std::vector<std::string> pass_order;  // registry order = pipeline order
  std::vector<Dimension> dims;
  const Dimension* find(const std::string& name) const;
  Dimension* find(const std::string& name);
  // The dimensions the sampler actually searches (not fixed, condition not fixed off).
  std::vector<const Dimension*> searched() const;
};

std::vector<PassSchema> registry_schemas();
SearchSpace derive_space(const std::vector<PassSchema>& passes, const std::string& target);
SearchSpace space_from_registry(const std::string& target);

// The space as sent to the Optuna side (tuner/python/cuvil_optuna.py reads this format).
nlohmann::json space_to_json(const SearchSpace& space);
// A stable hash of what is searched: a study is tied to its space.
std::string space_hash(const SearchSpace& space);

// Resolved values ({"layout": true, "layout.memory_layout": "nhwc", ...}) to a pipeline config,
// validated through the .cuvilpass reader. Missing values take the dimension's fixed or default.
passes::PipelineConfig config_from_values(const SearchSpace& space, const nlohmann::json& values,
                                          const std::string& suite);
// The default pipeline as values (the baseline trial).
nlohmann::json default_values(const SearchSpace& space);
nlohmann::json value_to_json(const passes::ParamValue& value);
// A parameter's value as people read it: a string without quotes, anything else as JSON.
inline std::string value_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace cuvil::tuner
