#include "tuner/search_space.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "passes/registry.h"

namespace cuvil::tuner {

using passes::ParamSpec;
using passes::ParamValue;

const Dimension* SearchSpace::find(const std::string& name) const {
  for (const Dimension& d : dims) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

Dimension* SearchSpace::find(const std::string& name) {
  for (Dimension& d : dims) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::vector<const Dimension*> SearchSpace::searched() const {
  std::vector<const Dimension*> out;
  for (const Dimension& d : dims) {
    if (d.fixed) continue;
    if (!d.condition.empty()) {
      const Dimension* parent = find(d.condition);
      if (parent && parent->fixed && !std::get<bool>(*parent->fixed)) continue;
    }
    out.push_back(&d);
  }
  return out;
}

std::vector<PassSchema> registry_schemas() {
  std::vector<PassSchema> out;
  for (const auto& pass : passes::pass_registry()) {
    out.push_back({std::string(pass->name()), pass->params(), pass->tuned_by_default()});
  }
  return out;
}

SearchSpace derive_space(const std::vector<PassSchema>& passes, const std::string& target) {
  SearchSpace space;
  space.target = target;
  for (const PassSchema& pass : passes) {
    // Registered passes of another target are not part of this target's space.
    if (const passes::Pass* p = passes::find_pass(pass.name); p && !p->applies_to(target)) continue;
    space.pass_order.push_back(pass.name);
    Dimension on;
    on.name = pass.name;
    on.pass = pass.name;
    on.kind = Dimension::Kind::boolean;
    on.default_value = true;  // the default pipeline runs every registered pass
    if (!pass.tuned) on.fixed = true;
    space.dims.push_back(on);
    for (const ParamSpec& spec : pass.params) {
      Dimension d;
      d.name = pass.name + "." + spec.name;
      d.pass = pass.name;
      d.param = spec.name;
      d.condition = pass.name;
      d.log_scale = spec.log_scale;
      d.default_value = spec.default_value;
      switch (spec.type) {
        case ParamSpec::Type::integer:
          d.kind = Dimension::Kind::integer;
          d.int_min = spec.int_min;
          d.int_max = spec.int_max;
          break;
        case ParamSpec::Type::real:
          d.kind = Dimension::Kind::real;
          d.real_min = spec.real_min;
          d.real_max = spec.real_max;
          break;
        case ParamSpec::Type::boolean:
          d.kind = Dimension::Kind::boolean;
          break;
        case ParamSpec::Type::choice:
          d.kind = Dimension::Kind::choice;
          d.choices = spec.choices;
          break;
      }
      if (d.kind == Dimension::Kind::integer && d.int_min == d.int_max) d.fixed = d.int_min;
      if (!spec.targets.empty() &&
          std::find(spec.targets.begin(), spec.targets.end(), target) == spec.targets.end()) {
        d.fixed = spec.default_value;  // only the default runs on this target
      }
      if (!pass.tuned) d.fixed = spec.default_value;
      space.dims.push_back(std::move(d));
    }
  }
  return space;
}

SearchSpace space_from_registry(const std::string& target) {
  return derive_space(registry_schemas(), target);
}

nlohmann::json value_to_json(const ParamValue& value) {
  if (auto* i = std::get_if<int64_t>(&value)) return *i;
  if (auto* d = std::get_if<double>(&value)) return *d;
  if (auto* b = std::get_if<bool>(&value)) return *b;
  return std::get<std::string>(value);
}

namespace {

std::string_view kind_name(Dimension::Kind kind) {
  switch (kind) {
    case Dimension::Kind::boolean:
      return "bool";
    case Dimension::Kind::integer:
      return "int";
    case Dimension::Kind::real:
      return "float";
    case Dimension::Kind::choice:
      return "choice";
  }
  return "?";
}

// Converts a sampled JSON value to the dimension's type, rejecting anything else.
ParamValue value_from_json(const Dimension& d, const nlohmann::json& v) {
  auto bad = [&]() -> ParamValue {
    throw UserError("value " + v.dump() + " for '" + d.name + "' is not a " +
                    std::string(kind_name(d.kind)));
  };
  switch (d.kind) {
    case Dimension::Kind::boolean:
      if (!v.is_boolean()) return bad();
      return v.get<bool>();
    case Dimension::Kind::integer:
      if (!v.is_number_integer()) return bad();
      return v.get<int64_t>();
    case Dimension::Kind::real:
      if (!v.is_number()) return bad();
      return v.get<double>();
    case Dimension::Kind::choice:
      if (!v.is_string()) return bad();
      return v.get<std::string>();
  }
  return bad();
}

}  // namespace

nlohmann::json space_to_json(const SearchSpace& space) {
  nlohmann::json dims = nlohmann::json::array();
  for (const Dimension& d : space.dims) {
    nlohmann::json j;
    j["name"] = d.name;
    j["kind"] = kind_name(d.kind);
    if (!d.condition.empty()) j["condition"] = d.condition;
    if (d.fixed) {
      j["fixed"] = value_to_json(*d.fixed);
    } else if (d.kind == Dimension::Kind::integer) {
      j["low"] = d.int_min;
      j["high"] = d.int_max;
      j["log"] = d.log_scale;
      j["step"] = d.step;
      if (d.power_of_two) j["power_of_two"] = true;
      if (!d.multiple_of.empty()) {
        j["multiple_of"] = d.multiple_of;
        j["factor_low"] = d.factor_min;
        j["factor_high"] = d.factor_max;
      }
    } else if (d.kind == Dimension::Kind::real) {
      j["low"] = d.real_min;
      j["high"] = d.real_max;
      j["log"] = d.log_scale;
    } else if (d.kind == Dimension::Kind::choice) {
      j["choices"] = d.choices;
    }
    j["default"] = value_to_json(d.default_value);
    dims.push_back(std::move(j));
  }
  return dims;
}

std::string space_hash(const SearchSpace& space) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : space_to_json(space).dump()) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

passes::PipelineConfig config_from_values(const SearchSpace& space, const nlohmann::json& values,
                                          const std::string& suite) {
  auto value_of = [&](const Dimension& d) -> ParamValue {
    if (d.fixed) return *d.fixed;
    auto it = values.find(d.name);
    if (it == values.end()) return d.default_value;
    return value_from_json(d, *it);
  };
  passes::PipelineConfig config;
  config.target = space.target;
  config.suite = suite;
  for (const std::string& pass_name : space.pass_order) {
    const Dimension* on = space.find(pass_name);
    CUVIL_CHECK(on != nullptr, "pass switch missing from the space");
    if (!std::get<bool>(value_of(*on))) continue;
    passes::PassInvocation invocation;
    invocation.name = pass_name;
    for (const Dimension& d : space.dims) {
      if (d.pass == pass_name && !d.is_switch()) invocation.params[d.param] = value_of(d);
    }
    config.passes.push_back(std::move(invocation));
  }
  // The registry's own reader checks every range and type, as for a user's file.
  return passes::parse_cuvilpass(passes::to_yaml(config), "<trial config>");
}

nlohmann::json default_values(const SearchSpace& space) {
  nlohmann::json values = nlohmann::json::object();
  for (const Dimension& d : space.dims) {
    values[d.name] = value_to_json(d.fixed ? *d.fixed : d.default_value);
  }
  return values;
}

}  // namespace cuvil::tuner
