#include "tuner/space_file.h"

#include <yaml-cpp/yaml.h>

#include <sys/stat.h>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "base/error.h"
#include "passes/yaml_document.h"

namespace cuvil::tuner {

namespace {

using passes::ParamValue;

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}
  [[noreturn]] void fail(const YAML::Node& node, const std::string& field,
                         const std::string& message) const {
    int line = 1;
    if (node.IsDefined() && !node.Mark().is_null()) line = node.Mark().line + 1;
    throw UserError(source_ + ":" + std::to_string(line) + ": " + field + ": " + message);
  }

 private:
  std::string source_;
};

bool plain(const YAML::Node& n) {
  return n.IsScalar() && n.Tag() != "!";
}

int64_t read_int(const Reader& r, const YAML::Node& n, const std::string& field) {
  int64_t v = 0;
  const std::string& s = n.IsScalar() ? n.Scalar() : std::string();
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!plain(n) || s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    r.fail(n, field, "expected an integer, got '" + s + "'");
  }
  return v;
}

double read_real(const Reader& r, const YAML::Node& n, const std::string& field) {
  double v = 0;
  const std::string& s = n.IsScalar() ? n.Scalar() : std::string();
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!plain(n) || s.empty() || ec != std::errc() || ptr != s.data() + s.size() ||
      !std::isfinite(v)) {
    r.fail(n, field, "expected a number, got '" + s + "'");
  }
  return v;
}

bool read_bool(const Reader& r, const YAML::Node& n, const std::string& field) {
  if (plain(n) && n.Scalar() == "true") return true;
  if (plain(n) && n.Scalar() == "false") return false;
  r.fail(n, field, "expected true or false, got '" + (n.IsScalar() ? n.Scalar() : "?") + "'");
}

ParamValue read_value(const Reader& r, const Dimension& d, const YAML::Node& n,
                      const std::string& field) {
  switch (d.kind) {
    case Dimension::Kind::boolean:
      return read_bool(r, n, field);
    case Dimension::Kind::integer: {
      const int64_t v = read_int(r, n, field);
      if (v < d.int_min || v > d.int_max) {
        r.fail(n, field,
               "value " + std::to_string(v) + " is outside the registry's range [" +
                   std::to_string(d.int_min) + ", " + std::to_string(d.int_max) + "]");
      }
      return v;
    }
    case Dimension::Kind::real: {
      const double v = read_real(r, n, field);
      if (v < d.real_min || v > d.real_max) r.fail(n, field, "value outside the registry's range");
      return v;
    }
    case Dimension::Kind::choice: {
      const std::string s = n.IsScalar() ? n.Scalar() : "";
      for (const std::string& c : d.choices) {
        if (c == s) return s;
      }
      std::string known;
      for (const std::string& c : d.choices) known += (known.empty() ? "" : "|") + c;
      r.fail(n, field, "'" + s + "' is not one of " + known);
    }
  }
  r.fail(n, field, "unsupported kind");
}

bool is_power_of_two(int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

void narrow_param(const Reader& r, SearchSpace& space, Dimension& d, const YAML::Node& spec,
                  const std::string& field) {
  if (!spec.IsMap()) r.fail(spec, field, "expected a mapping (fixed, min, max, choices, ...)");
  const Dimension registry = d;  // min and max are checked against the registry's range
  std::set<std::string> seen;
  for (const auto& kv : spec) {
    const std::string key = kv.first.Scalar();
    const std::string f = field + "." + key;
    const YAML::Node& v = kv.second;
    if (!seen.insert(key).second) r.fail(kv.first, f, "given twice");
    const bool numeric = d.kind == Dimension::Kind::integer || d.kind == Dimension::Kind::real;
    if (key == "fixed") {
      d.fixed = read_value(r, d, v, f);
    } else if ((key == "min" || key == "max") && numeric) {
      if (d.kind == Dimension::Kind::integer) {
        const int64_t x = std::get<int64_t>(read_value(r, registry, v, f));
        (key == "min" ? d.int_min : d.int_max) = x;
      } else {
        const double x = std::get<double>(read_value(r, registry, v, f));
        (key == "min" ? d.real_min : d.real_max) = x;
      }
    } else if (key == "log" && numeric) {
      d.log_scale = read_bool(r, v, f);
    } else if (key == "step" && d.kind == Dimension::Kind::integer) {
      d.step = read_int(r, v, f);
      if (d.step < 1) r.fail(v, f, "step must be at least 1");
    } else if (key == "power_of_two" && d.kind == Dimension::Kind::integer) {
      d.power_of_two = read_bool(r, v, f);
    } else if (key == "multiple_of" && d.kind == Dimension::Kind::integer) {
      const std::string base = v.IsScalar() ? v.Scalar() : "";
      // A bare name means a parameter of the same pass.
      const std::string full = base.find('.') == std::string::npos ? d.pass + "." + base : base;
      const Dimension* b = space.find(full);
      if (b == nullptr || b->kind != Dimension::Kind::integer || b == &d) {
        r.fail(v, f, "'" + base + "' is not another integer parameter");
      }
      d.multiple_of = full;
    } else if ((key == "factor_min" || key == "factor_max") && d.kind == Dimension::Kind::integer) {
      const int64_t x = read_int(r, v, f);
      if (x < 1) r.fail(v, f, "a factor must be at least 1");
      (key == "factor_min" ? d.factor_min : d.factor_max) = x;
    } else if (key == "choices" && d.kind == Dimension::Kind::choice) {
      if (!v.IsSequence() || v.size() == 0) r.fail(v, f, "expected a non-empty list");
      std::vector<std::string> subset;
      for (const YAML::Node& c : v) subset.push_back(std::get<std::string>(read_value(r, d, c, f)));
      d.choices = subset;
    } else {
      r.fail(kv.first, f,
             "unknown key for a " +
                 std::string(d.kind == Dimension::Kind::integer  ? "int"
                             : d.kind == Dimension::Kind::real   ? "float"
                             : d.kind == Dimension::Kind::choice ? "choice"
                                                                 : "bool") +
                 " parameter (fixed, min, max, log, step, choices, power_of_two, multiple_of, "
                 "factor_min, factor_max as the type allows)");
    }
  }
  if (d.kind == Dimension::Kind::integer && d.int_min > d.int_max)
    r.fail(spec, field, "min is above max");
  if (d.kind == Dimension::Kind::real && d.real_min > d.real_max)
    r.fail(spec, field, "min is above max");
  if (d.power_of_two) {
    if (!d.multiple_of.empty())
      r.fail(spec, field, "power_of_two and multiple_of exclude each other");
    int64_t p = 1;
    while (p < d.int_min) p *= 2;
    if (p > d.int_max) r.fail(spec, field, "no power of two lies in [min, max]");
  }
  if (!d.multiple_of.empty() && d.factor_min > d.factor_max)
    r.fail(spec, field, "factor_min is above factor_max");
  if (d.kind == Dimension::Kind::real && d.log_scale && d.real_min <= 0)
    r.fail(spec, field, "a log-scale range must be positive");
  if (d.kind == Dimension::Kind::integer && d.log_scale && d.int_min <= 0)
    r.fail(spec, field, "a log-scale range must be positive");
  if (d.kind == Dimension::Kind::choice && !d.fixed) {
    // The default must stay inside the narrowed choices: it is the baseline trial.
    const std::string& def = std::get<std::string>(d.default_value);
    bool found = false;
    for (const std::string& c : d.choices) found = found || c == def;
    if (!found) d.default_value = d.choices.front();
  }
  if (d.kind == Dimension::Kind::integer && !d.fixed) {
    int64_t& def = std::get<int64_t>(d.default_value);
    def = std::min(std::max(def, d.int_min), d.int_max);
    if (d.power_of_two && !is_power_of_two(def)) {
      int64_t p = 1;
      while (p < d.int_min) p *= 2;
      def = p;
    }
  }
  if (d.kind == Dimension::Kind::real && !d.fixed) {
    double& def = std::get<double>(d.default_value);
    def = std::min(std::max(def, d.real_min), d.real_max);
  }
}

}  // namespace

void narrow_space(SearchSpace& space, const std::string& yaml_text, const std::string& source,
                  const std::string& suite) {
  const Reader r(source);
  const YAML::Node root = passes::load_one_document(yaml_text, source);
  if (root.IsNull()) return;  // an empty file narrows nothing
  if (!root.IsMap()) r.fail(root, "space", "expected a mapping with 'passes'");
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      if (key == "suite") {
        if (!kv.second.IsScalar()) r.fail(kv.second, "suite", "expected a suite name");
        if (!suite.empty() && kv.second.Scalar() != suite) {
          r.fail(kv.second, "suite",
                 "this space is for suite '" + kv.second.Scalar() + "', not '" + suite + "'");
        }
      } else if (key == "passes") {
        const YAML::Node& list = kv.second;
        if (!list.IsMap()) r.fail(list, "passes", "expected a mapping of pass name to settings");
        for (const auto& p : list) {
          const std::string name = p.first.Scalar();
          const std::string field = "passes." + name;
          Dimension* on = space.find(name);
          if (on == nullptr || !on->is_switch()) {
            std::string known;
            for (const std::string& n : space.pass_order) known += (known.empty() ? "" : ", ") + n;
            r.fail(p.first, field, "unknown pass (registered: " + known + ")");
          }
          if (!p.second.IsMap()) r.fail(p.second, field, "expected a mapping (enabled, params)");
          for (const auto& s : p.second) {
            const std::string skey = s.first.Scalar();
            if (skey == "enabled") {
              if (plain(s.second) && s.second.Scalar() == "tune") {
                on->fixed.reset();
              } else {
                on->fixed = read_bool(r, s.second, field + ".enabled");
              }
            } else if (skey == "freeze") {
              // The pass runs with its default parameters: nothing of it is searched.
              if (read_bool(r, s.second, field + ".freeze")) {
                on->fixed = true;
                for (Dimension& x : space.dims) {
                  if (x.pass == name && !x.is_switch()) x.fixed = x.default_value;
                }
              }
            } else if (skey == "params") {
              if (!s.second.IsMap()) r.fail(s.second, field + ".params", "expected a mapping");
              for (const auto& q : s.second) {
                const std::string pname = q.first.Scalar();
                Dimension* d = space.find(name + "." + pname);
                if (d == nullptr) {
                  std::string known;
                  for (const Dimension& x : space.dims) {
                    if (x.pass == name && !x.is_switch())
                      known += (known.empty() ? "" : ", ") + x.param;
                  }
                  r.fail(q.first, field + ".params." + pname,
                         "unknown parameter of pass '" + name + "' (" +
                             (known.empty() ? "it takes none" : "parameters: " + known) + ")");
                }
                narrow_param(r, space, *d, q.second, field + ".params." + pname);
              }
            } else {
              r.fail(s.first, field + "." + skey, "unknown key (expected enabled, freeze, params)");
            }
          }
        }
      } else {
        r.fail(kv.first, key, "unknown key (expected suite, passes)");
      }
    }
  } catch (const YAML::Exception& e) {
    throw UserError(source + ":" + std::to_string(e.mark.is_null() ? 1 : e.mark.line + 1) +
                    ": yaml: " + e.msg);
  }
  // The baseline trial is the default pipeline: a multiple_of dimension must be able to express
  // its default as an allowed factor of its base's default (else the sampler's rounding would
  // move the baseline off the default, as kc 768 became 192 with factors 1..1 of mc 192).
  for (const Dimension& d : space.dims) {
    if (d.multiple_of.empty() || d.fixed) continue;
    const Dimension* base = space.find(d.multiple_of);
    if (!base || base->fixed) continue;
    const int64_t def = std::get<int64_t>(d.default_value);
    const int64_t base_def = std::get<int64_t>(base->default_value);
    if (base_def <= 0 || def % base_def != 0 || def / base_def < d.factor_min ||
        def / base_def > d.factor_max) {
      throw UserError(source + ": passes." + d.pass + ".params." + d.param + ": multiple_of " +
                      d.multiple_of + " with factors " + std::to_string(d.factor_min) + ".." +
                      std::to_string(d.factor_max) + " cannot give the default " +
                      std::to_string(def) + " (" + d.multiple_of + "'s default is " +
                      std::to_string(base_def) +
                      "); widen factor_min/factor_max so the baseline trial is the default");
    }
  }
}

void load_space_file(SearchSpace& space, const std::string& path, const std::string& suite) {
  // A directory opens and reads as empty: the whole registry would be searched unnoticed.
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw UserError(path + ": not a search-space file (a directory or a device)");
  }
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot read search-space file: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  narrow_space(space, text.str(), path, suite);
}

std::string default_space_file(const std::string& config_dir, const std::string& suite) {
  const std::string path = config_dir + "/search/" + suite + ".yaml";
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? path : "";
}

}  // namespace cuvil::tuner
