#include "tuner/pruned_space.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <set>

namespace cuvil::tuner {

namespace {

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", v);
  return text;
}

void emit_scalar(YAML::Emitter& out, const nlohmann::json& v) {
  if (v.is_string()) {
    out << v.get<std::string>();
  } else {
    out << v.dump();
  }
}

// The study's own narrowing of an important parameter, so the second study searches the same
// range (not the registry's wider one).
void emit_range(YAML::Emitter& out, const Dimension& d) {
  out << YAML::Flow << YAML::BeginMap;
  if (d.kind == Dimension::Kind::integer) {
    out << YAML::Key << "min" << YAML::Value << d.int_min << YAML::Key << "max" << YAML::Value
        << d.int_max;
    if (d.log_scale) out << YAML::Key << "log" << YAML::Value << true;
    if (d.step != 1) out << YAML::Key << "step" << YAML::Value << d.step;
    if (d.power_of_two) out << YAML::Key << "power_of_two" << YAML::Value << true;
    if (!d.multiple_of.empty()) {
      out << YAML::Key << "multiple_of" << YAML::Value << d.multiple_of << YAML::Key << "factor_min"
          << YAML::Value << d.factor_min << YAML::Key << "factor_max" << YAML::Value
          << d.factor_max;
    }
  } else if (d.kind == Dimension::Kind::real) {
    out << YAML::Key << "min" << YAML::Value << value_to_json(d.real_min).dump() << YAML::Key
        << "max" << YAML::Value << value_to_json(d.real_max).dump();
    if (d.log_scale) out << YAML::Key << "log" << YAML::Value << true;
  } else if (d.kind == Dimension::Kind::choice) {
    out << YAML::Key << "choices" << YAML::Value << YAML::Flow << d.choices;
  }
  out << YAML::EndMap;
}

}  // namespace

std::string pruned_space_yaml(const std::string& suite, const SearchSpace& space,
                              const nlohmann::json& values, const ImportanceReport& importance,
                              double threshold) {
  std::set<std::string> important;
  for (const ParamImportance& p : importance.ranking) {
    if (p.share >= threshold) important.insert(p.name);
  }
  const nlohmann::json defaults = default_values(space);
  auto value_of = [&](const Dimension& d) {
    if (d.fixed) return value_to_json(*d.fixed);
    return values.contains(d.name) ? values[d.name] : defaults[d.name];
  };
  YAML::Emitter out;
  out << YAML::Comment("Pruned search space written by cuvil-tune-gen: parameters with at least " +
                       number_text(threshold * 100) +
                       "% of the total mean |SHAP| keep the study's ranges; the rest are fixed "
                       "at the best trial's values.");
  out << YAML::BeginMap << YAML::Key << "suite" << YAML::Value << suite;
  out << YAML::Key << "passes" << YAML::Value << YAML::BeginMap;
  for (const std::string& pass : space.pass_order) {
    const Dimension* on = space.find(pass);
    out << YAML::Key << pass << YAML::Value << YAML::BeginMap;
    const bool searched_switch = !on->fixed && important.count(pass);
    const bool enabled = value_of(*on).get<bool>();
    out << YAML::Key << "enabled" << YAML::Value;
    if (searched_switch) {
      out << "tune";
    } else {
      out << enabled;
    }
    if (searched_switch || enabled) {
      bool any = false;
      for (const Dimension& d : space.dims) {
        if (d.pass != pass || d.is_switch()) continue;
        if (!any) out << YAML::Key << "params" << YAML::Value << YAML::BeginMap;
        any = true;
        out << YAML::Key << d.param << YAML::Value;
        if (!d.fixed && important.count(d.name)) {
          emit_range(out, d);
        } else {
          out << YAML::Flow << YAML::BeginMap << YAML::Key << "fixed" << YAML::Value;
          emit_scalar(out, value_of(d));
          out << YAML::EndMap;
        }
      }
      if (any) out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace cuvil::tuner
