#include "passes/pass.h"

#include <sstream>

#include "base/error.h"

namespace cuvil::passes {

ParamSpec int_param(std::string name, int64_t min, int64_t max, int64_t default_value,
                    std::string help, Scale scale) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamSpec::Type::integer;
  p.int_min = min;
  p.int_max = max;
  p.log_scale = scale == Scale::log;
  p.default_value = default_value;
  p.help = std::move(help);
  return p;
}

ParamSpec choice_param(std::string name, std::vector<std::string> choices,
                       std::string default_value, std::string help) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamSpec::Type::choice;
  p.choices = std::move(choices);
  p.default_value = std::move(default_value);
  p.help = std::move(help);
  return p;
}

ParamSpec bool_param(std::string name, bool default_value, std::string help) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamSpec::Type::boolean;
  p.default_value = default_value;
  p.help = std::move(help);
  return p;
}

std::string_view to_string(ParamSpec::Type type) {
  switch (type) {
    case ParamSpec::Type::integer:
      return "int";
    case ParamSpec::Type::real:
      return "float";
    case ParamSpec::Type::boolean:
      return "bool";
    case ParamSpec::Type::choice:
      return "enum";
  }
  return "?";
}

std::string format_value(const ParamValue& value) {
  if (auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&value)) {
    std::ostringstream os;
    os << *d;
    return os.str();
  }
  if (auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  return std::get<std::string>(value);
}

std::string describe_range(const ParamSpec& spec) {
  switch (spec.type) {
    case ParamSpec::Type::integer:
      return "int in [" + std::to_string(spec.int_min) + ", " + std::to_string(spec.int_max) + "]" +
             (spec.log_scale ? " (log)" : "");
    case ParamSpec::Type::real:
      return "float in [" + format_value(spec.real_min) + ", " + format_value(spec.real_max) + "]" +
             (spec.log_scale ? " (log)" : "");
    case ParamSpec::Type::boolean:
      return "bool";
    case ParamSpec::Type::choice: {
      std::string s = "one of ";
      for (size_t i = 0; i < spec.choices.size(); ++i) s += (i ? "|" : "") + spec.choices[i];
      return s;
    }
  }
  return "?";
}

namespace {
template <typename T>
const T& get(const ParamMap& params, const std::string& name) {
  auto it = params.find(name);
  CUVIL_CHECK(it != params.end(), "pass parameter '" + name + "' missing after validation");
  const T* v = std::get_if<T>(&it->second);
  CUVIL_CHECK(v != nullptr, "pass parameter '" + name + "' has the wrong type after validation");
  return *v;
}
}  // namespace

int64_t param_int(const ParamMap& params, const std::string& name) {
  return get<int64_t>(params, name);
}
bool param_bool(const ParamMap& params, const std::string& name) {
  return get<bool>(params, name);
}
const std::string& param_choice(const ParamMap& params, const std::string& name) {
  return get<std::string>(params, name);
}

}  // namespace cuvil::passes
