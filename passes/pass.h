// A pass: a name, a typed parameter schema and a run(Graph&, params). The registry
// (registry.h) lists every pass once; the CLI, .cuvilpass validation and the tuner's search
// space all read it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "passes/ir/graph.h"

namespace cuvil::passes {

using ParamValue = std::variant<int64_t, double, bool, std::string>;
using ParamMap = std::map<std::string, ParamValue>;

struct ParamSpec {
  enum class Type : uint8_t { integer, real, boolean, choice };
  std::string name;
  Type type = Type::integer;
  int64_t int_min = 0, int_max = 0;   // integer: inclusive range
  double real_min = 0, real_max = 0;  // real: inclusive range
  bool log_scale = false;             // the tuner samples it on a log scale
  std::vector<std::string> choices;   // choice: allowed values
  ParamValue default_value;
  std::string help;
  // Targets where a value other than the default can run; empty: every target the pass applies
  // to. The tuner's space for another target fixes the parameter at its default.
  std::vector<std::string> targets;
};

// The ways passes declare a parameter (written once, here).
enum class Scale : uint8_t { linear, log };
ParamSpec int_param(std::string name, int64_t min, int64_t max, int64_t default_value,
                    std::string help, Scale scale = Scale::linear);
ParamSpec choice_param(std::string name, std::vector<std::string> choices,
                       std::string default_value, std::string help);
ParamSpec bool_param(std::string name, bool default_value, std::string help);

std::string_view to_string(ParamSpec::Type type);
std::string format_value(const ParamValue& value);
// "integer in [1, 8]", "one of nchw|nhwc", ...
std::string describe_range(const ParamSpec& spec);

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  virtual std::vector<ParamSpec> params() const { return {}; }
  // The targets ("cpu", "cuda") whose pipelines may run this pass: graph rewrites and memory
  // planning both, kernel choice, tiling and threading only their backend's. Each pass says.
  virtual bool applies_to(std::string_view target) const = 0;
  // Whether the tuner searches this pass by default. Rewrites that are always worth running
  // (canonicalisations such as recognize-patterns) say no: the space keeps them on at their
  // defaults, and a search-space file can still open them (enabled: tune).
  virtual bool tuned_by_default() const { return true; }
  // params holds every declared parameter (defaults filled in, already validated).
  virtual void run(ir::Graph& graph, const ParamMap& params) const = 0;
};

// Typed access to a validated ParamMap.
int64_t param_int(const ParamMap& params, const std::string& name);
bool param_bool(const ParamMap& params, const std::string& name);
const std::string& param_choice(const ParamMap& params, const std::string& name);

}  // namespace cuvil::passes
