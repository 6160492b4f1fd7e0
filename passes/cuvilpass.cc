#include "passes/cuvilpass.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "passes/ir/edit_distance.h"
#include "passes/registry.h"
#include "passes/target_cpu.h"
#include "passes/targets.h"
#include "passes/yaml_document.h"

namespace cuvil::passes {

namespace {

constexpr int kVersion = 1;
const char* const kTopLevelKeys[] = {"cuvil_pass_version", "target", "suite",
                                     "cpu_features",       "passes", "provenance"};

std::string target_list() {
  std::string out;
  for (std::string_view t : kTargets) out += (out.empty() ? "" : " or ") + std::string(t);
  return out;
}

// Reports problems as "FILE:LINE: FIELD: message", with lines taken from yaml-cpp marks.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(int line, const std::string& field, const std::string& message) const {
    throw UserError(source_ + ":" + std::to_string(line) + ": " + field + ": " + message);
  }
  // 1-based line of a node, or of `fallback` when the node has no position (null, missing).
  static int line_of(const YAML::Node& node, int fallback) {
    if (!node.IsDefined()) return fallback;
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? fallback : mark.line + 1;
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

std::string describe(const YAML::Node& node) {
  if (node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  if (node.Tag() == "!") return "the string \"" + node.Scalar() + "\"";
  return "'" + node.Scalar() + "'";
}

// Why `text` cannot be a name that a .cuvilpass file writes back as it read it (empty when it
// can): it must be UTF-8 without control characters. Such bytes come from a damaged file, and
// YAML would not write them back unchanged.
std::string not_printable_text(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::string at = " at byte " + std::to_string(i);
    if (byte < 0x20 || byte == 0x7f) return "a control character" + at;
    if (byte < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length, and the smallest code point of that length (no overlong forms).
    const int length = byte >= 0xf0 && byte <= 0xf4 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc2 ? 2 : 0;
    if (length == 0 || byte > 0xf4 || i + length > text.size())
      return "a byte that is not UTF-8" + at;
    uint32_t code = byte & (0x7f >> length);
    for (int k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return "a byte that is not UTF-8" + at;
      code = code << 6 | (next & 0x3f);
    }
    const uint32_t smallest = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
    if (code < smallest || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return "a byte that is not UTF-8" + at;
    }
    if (code < 0xa0) return "a control character" + at;  // C1: U+0080..U+009F
    i += static_cast<size_t>(length);
  }
  return "";
}

std::string closest_pass(const std::string& name) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& pass : pass_registry()) {
    const size_t d = edit_distance(name, pass->name());
    if (d < best_distance) {
      best_distance = d;
      best = std::string(pass->name());
    }
  }
  return best;
}

std::string registered_names() {
  std::string names;
  for (const auto& pass : pass_registry())
    names += (names.empty() ? "" : ", ") + std::string(pass->name());
  return names;
}

// A plain (unquoted) scalar: quoted text is a string even when it looks like a number.
bool is_plain_scalar(const YAML::Node& node) {
  return node.IsScalar() && node.Tag() != "!";
}

bool parse_int(const std::string& text, int64_t* out) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, *out);
  return ec == std::errc() && ptr == end && begin != end;
}

bool parse_real(const std::string& text, double* out) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, *out);
  return ec == std::errc() && ptr == end && begin != end && std::isfinite(*out);
}

// Converts and range-checks one parameter value against its spec.
ParamValue read_param(const Reader& reader, const ParamSpec& spec, const YAML::Node& node, int line,
                      const std::string& field) {
  const std::string expected = describe_range(spec);
  auto wrong = [&]() -> ParamValue {
    reader.fail(line, field, "expected " + expected + ", got " + describe(node));
  };
  if (!node.IsScalar()) return wrong();
  const std::string& text = node.Scalar();
  switch (spec.type) {
    case ParamSpec::Type::integer: {
      int64_t v = 0;
      if (!is_plain_scalar(node) || !parse_int(text, &v)) return wrong();
      if (v < spec.int_min || v > spec.int_max) {
        reader.fail(line, field, "value " + text + " is out of range: expected " + expected);
      }
      return v;
    }
    case ParamSpec::Type::real: {
      double v = 0;
      if (!is_plain_scalar(node) || !parse_real(text, &v)) return wrong();
      if (v < spec.real_min || v > spec.real_max) {
        reader.fail(line, field, "value " + text + " is out of range: expected " + expected);
      }
      return v;
    }
    case ParamSpec::Type::boolean:
      // Only true/false: YAML 1.1's yes/no/on/off are too easy to write by accident.
      if (is_plain_scalar(node) && text == "true") return true;
      if (is_plain_scalar(node) && text == "false") return false;
      return wrong();
    case ParamSpec::Type::choice:
      for (const std::string& c : spec.choices) {
        if (c == text) return text;
      }
      reader.fail(line, field, "'" + text + "' is not allowed: expected " + expected);
  }
  return wrong();
}

ParamMap defaults_of(const Pass& pass) {
  ParamMap params;
  for (const ParamSpec& spec : pass.params()) params[spec.name] = spec.default_value;
  return params;
}

PassInvocation read_pass(const Reader& reader, const YAML::Node& entry, size_t index, int list_line,
                         const std::string& target) {
  const std::string where = "passes[" + std::to_string(index) + "]";
  const int line = Reader::line_of(entry, list_line);
  if (!entry.IsMap())
    reader.fail(line, where, "expected a mapping with 'name', got " + describe(entry));
  // A default YAML::Node is a defined null, so presence is tracked separately.
  YAML::Node name_node, params_node;
  bool has_name = false, has_params = false;
  for (const auto& kv : entry) {
    const std::string key = kv.first.Scalar();
    const int key_line = Reader::line_of(kv.first, line);
    if (key == "name") {
      name_node = kv.second;
      has_name = true;
    } else if (key == "params") {
      params_node = kv.second;
      has_params = true;
    } else {
      reader.fail(key_line, where + "." + key, "unknown key (expected name, params)");
    }
  }
  if (!has_name) reader.fail(line, where + ".name", "missing: every pass entry needs a name");
  if (!is_plain_scalar(name_node) || name_node.Scalar().empty()) {
    reader.fail(Reader::line_of(name_node, line), where + ".name",
                "expected a pass name, got " + describe(name_node));
  }
  PassInvocation invocation;
  invocation.name = name_node.Scalar();
  const Pass* pass = find_pass(invocation.name);
  if (pass == nullptr) {
    reader.fail(Reader::line_of(name_node, line), where + ".name",
                "unknown pass '" + invocation.name + "' (did you mean '" +
                    closest_pass(invocation.name) + "'? registered: " + registered_names() + ")");
  }
  if (!pass->applies_to(target)) {
    reader.fail(Reader::line_of(name_node, line), where + ".name",
                "pass '" + invocation.name + "' does not apply to target " + target +
                    " (it applies to: " + applicable_targets(*pass) + ")");
  }
  invocation.params = defaults_of(*pass);
  if (!has_params || params_node.IsNull()) return invocation;
  const int params_line = Reader::line_of(params_node, line);
  if (!params_node.IsMap()) {
    reader.fail(params_line, where + ".params", "expected a mapping, got " + describe(params_node));
  }
  const std::vector<ParamSpec> specs = pass->params();
  std::set<std::string> seen;
  for (const auto& kv : params_node) {
    const std::string key = kv.first.Scalar();
    const std::string field = where + ".params." + key;  // (keys are unique: load_one_document)
    const int key_line = Reader::line_of(kv.first, params_line);
    const ParamSpec* spec = nullptr;
    for (const ParamSpec& s : specs) {
      if (s.name == key) spec = &s;
    }
    if (spec == nullptr) {
      std::string known;
      for (const ParamSpec& s : specs) known += (known.empty() ? "" : ", ") + s.name;
      reader.fail(key_line, field,
                  "unknown parameter of pass '" + invocation.name + "' (" +
                      (known.empty() ? "it takes none" : "parameters: " + known) + ")");
    }
    if (!seen.insert(key).second) reader.fail(key_line, field, "given twice");
    invocation.params[key] =
        read_param(reader, *spec, kv.second, Reader::line_of(kv.second, key_line), field);
  }
  return invocation;
}

PipelineConfig read_config(const Reader& reader, const YAML::Node& root) {
  if (!root.IsMap()) {
    reader.fail(Reader::line_of(root, 1), "cuvil_pass_version",
                "expected a mapping starting with 'cuvil_pass_version: 1', got " + describe(root));
  }
  std::map<std::string, std::pair<YAML::Node, int>> fields;  // value, key line
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    const int key_line = Reader::line_of(kv.first, 1);
    bool known = false;
    for (const char* k : kTopLevelKeys) known = known || key == k;
    if (!known) {
      reader.fail(key_line, key,
                  "unknown key (expected cuvil_pass_version, target, suite, cpu_features, passes, "
                  "provenance)");
    }
    if (fields.count(key)) reader.fail(key_line, key, "given twice");
    fields[key] = {kv.second, key_line};
  }

  PipelineConfig config;
  config.source = reader.source();
  auto it = fields.find("cuvil_pass_version");
  if (it == fields.end()) {
    reader.fail(1, "cuvil_pass_version", "missing: this reader understands version 1");
  }
  {
    const YAML::Node& v = it->second.first;
    int64_t version = 0;
    if (!is_plain_scalar(v) || !parse_int(v.Scalar(), &version) || version != kVersion) {
      reader.fail(Reader::line_of(v, it->second.second), "cuvil_pass_version",
                  "unsupported version " + describe(v) + ": this reader understands version 1");
    }
  }

  it = fields.find("target");
  if (it == fields.end()) reader.fail(1, "target", "missing: expected " + target_list());
  {
    const YAML::Node& t = it->second.first;
    if (!t.IsScalar() || !is_known_target(t.Scalar())) {
      reader.fail(Reader::line_of(t, it->second.second), "target",
                  "expected " + target_list() + ", got " + describe(t));
    }
    config.target = t.Scalar();
  }

  if ((it = fields.find("suite")) != fields.end()) {
    const YAML::Node& s = it->second.first;
    if (!s.IsScalar()) {
      reader.fail(Reader::line_of(s, it->second.second), "suite",
                  "expected a suite name, got " + describe(s));
    }
    if (const std::string bad = not_printable_text(s.Scalar()); !bad.empty()) {
      reader.fail(Reader::line_of(s, it->second.second), "suite",
                  "expected a suite or model name (UTF-8 text), got " + bad);
    }
    config.suite = s.Scalar();
  }

  if ((it = fields.find("cpu_features")) != fields.end()) {
    const YAML::Node& list = it->second.first;
    const int line = Reader::line_of(list, it->second.second);
    if (config.target != "cpu") {
      reader.fail(line, "cpu_features", "applies only to target cpu");
    }
    if (!list.IsSequence()) {
      reader.fail(line, "cpu_features",
                  "expected a list of CPU features ([] for none), got " + describe(list));
    }
    std::vector<std::string> features;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string field = "cpu_features[" + std::to_string(i) + "]";
      const int item_line = Reader::line_of(list[i], line);
      if (!is_plain_scalar(list[i]) || !is_cpu_feature_name(list[i].Scalar())) {
        reader.fail(item_line, field,
                    "expected one of " + cpu_feature_names() + ", got " + describe(list[i]));
      }
      if (std::find(features.begin(), features.end(), list[i].Scalar()) != features.end()) {
        reader.fail(item_line, field, "'" + list[i].Scalar() + "' is listed twice");
      }
      features.push_back(list[i].Scalar());
    }
    config.cpu_features = std::move(features);
  }

  it = fields.find("passes");
  if (it == fields.end()) reader.fail(1, "passes", "missing: list the passes to run ([] for none)");
  {
    const YAML::Node& list = it->second.first;
    const int list_line = Reader::line_of(list, it->second.second);
    if (!list.IsSequence()) {
      reader.fail(list_line, "passes", "expected a list of passes, got " + describe(list));
    }
    std::map<std::string, int> first_line;
    for (size_t i = 0; i < list.size(); ++i) {
      PassInvocation invocation = read_pass(reader, list[i], i, list_line, config.target);
      const int line = Reader::line_of(list[i], list_line);
      auto [pos, inserted] = first_line.emplace(invocation.name, line);
      if (!inserted) {
        reader.fail(line, "passes[" + std::to_string(i) + "].name",
                    "pass '" + invocation.name + "' is listed twice (first on line " +
                        std::to_string(pos->second) + ")");
      }
      config.passes.push_back(std::move(invocation));
    }
  }

  if ((it = fields.find("provenance")) != fields.end() && !it->second.first.IsNull()) {
    YAML::Emitter out;
    out << it->second.first;
    config.provenance_yaml = out.c_str();
  }
  return config;
}

// Shortest text that reads back as the same double.
std::string exact_real(double value) {
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  CUVIL_CHECK(ec == std::errc(), "formatting a double failed");
  return std::string(buffer, ptr);
}

std::string canonical_value(const ParamValue& value) {
  if (const double* d = std::get_if<double>(&value)) return exact_real(*d);
  return format_value(value);
}

uint64_t fnv1a64(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace

PipelineConfig parse_cuvilpass(const std::string& text, const std::string& source_name) {
  const Reader reader(source_name);
  const YAML::Node root = load_one_document(text, source_name);
  try {
    return read_config(reader, root);
  } catch (const YAML::Exception& e) {
    // e.g. a mapping key that is itself a list; still the user's file at fault.
    reader.fail(e.mark.is_null() ? 1 : e.mark.line + 1, "yaml", e.msg);
  }
}

PipelineConfig load_cuvilpass(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UserError(path + ": is a directory, not a .cuvilpass file");
  }
  std::ifstream in(path);
  if (!in) {
    throw UserError(path + ": cannot read .cuvilpass file: " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_cuvilpass(text.str(), path);
}

std::string to_yaml(const PipelineConfig& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "cuvil_pass_version" << YAML::Value << config.version;
  out << YAML::Key << "target" << YAML::Value << config.target;
  if (!config.suite.empty()) out << YAML::Key << "suite" << YAML::Value << config.suite;
  if (config.cpu_features) {
    out << YAML::Key << "cpu_features" << YAML::Value << YAML::Flow << *config.cpu_features;
  }
  out << YAML::Key << "passes" << YAML::Value << YAML::BeginSeq;
  for (const PassInvocation& p : config.passes) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << p.name;
    if (!p.params.empty()) {
      out << YAML::Key << "params" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [key, value] : p.params) {
        out << YAML::Key << key << YAML::Value << canonical_value(value);
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  if (!config.provenance_yaml.empty()) {
    YAML::Node provenance;
    try {
      provenance = YAML::Load(config.provenance_yaml);
    } catch (const YAML::Exception& e) {
      throw UserError("provenance of " + config.source + " is not valid YAML: " + e.msg);
    }
    out << YAML::Key << "provenance" << YAML::Value << provenance;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void save_cuvilpass(const PipelineConfig& config, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw UserError(path + ": cannot write .cuvilpass file: " + std::strerror(errno));
  out << to_yaml(config);
  if (!out.flush()) throw UserError(path + ": writing failed: " + std::strerror(errno));
}

PipelineConfig default_pipeline(const std::string& target) {
  if (!is_known_target(target))
    throw UserError("unknown target '" + target + "' (expected " + target_list() + ")");
  PipelineConfig config;
  config.target = target;
  config.source = "<default pipeline>";
  for (const auto& pass : pass_registry()) {
    if (!pass->applies_to(target)) continue;
    config.passes.push_back({std::string(pass->name()), defaults_of(*pass)});
  }
  return config;
}

std::string config_hash(const PipelineConfig& config) {
  std::string canonical = "cuvil_pass_version=" + std::to_string(config.version) + "\n";
  canonical += "target=" + config.target + "\n";
  if (config.cpu_features) {  // only when named, so that older files keep their hashes
    // A set: the order it was written in changes no plan.
    std::vector<std::string> features = *config.cpu_features;
    std::sort(features.begin(), features.end());
    canonical += "cpu_features=";
    for (const std::string& f : features) canonical += f + ",";
    canonical += "\n";
  }
  for (const PassInvocation& p : config.passes) {
    canonical += "pass=" + p.name + "\n";
    for (const auto& [key, value] : p.params) {
      canonical += "  " + key + "=" + canonical_value(value) + "\n";
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a64(canonical)));
  return hex;
}

}  // namespace cuvil::passes
