#include "reports/dashboard/config_diff.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <utility>

namespace cuvil::reports::dashboard {

namespace {

constexpr const char* kArrow = " \u2192 ";
constexpr const char* kDefault = "(default)";

using Params = std::vector<std::pair<std::string, std::string>>;

struct PassEntry {
  std::string id;  // the pass name; "name#2" for its second entry in one file, and so on
  Params params;
};

struct ParsedConfig {
  std::string problem;  // why it could not be read; empty when it was
  std::string target;
  std::vector<PassEntry> passes;
};

std::string text_of(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  if (!node.IsDefined() || node.IsNull()) return "null";
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

ParsedConfig parse(const std::string& yaml) {
  ParsedConfig c;
  if (yaml.empty()) {
    c.problem = "its text was not stored";
    return c;
  }
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    c.problem = "its text is not YAML (" + e.msg + ")";
    return c;
  }
  if (!root.IsMap()) {
    c.problem = "its text is not a .cuvilpass mapping";
    return c;
  }
  if (root["target"] && root["target"].IsScalar()) c.target = root["target"].Scalar();
  const YAML::Node passes = root["passes"];
  if (passes && !passes.IsNull() && !passes.IsSequence()) {
    c.problem = "its 'passes' is not a list";
    return c;
  }
  std::vector<std::string> seen;
  for (const YAML::Node& entry : passes) {
    if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar()) {
      c.problem = "a pass entry has no name";
      return c;
    }
    const std::string name = entry["name"].Scalar();
    const auto occurrences = std::count(seen.begin(), seen.end(), name);
    seen.push_back(name);
    PassEntry p;
    p.id = occurrences == 0 ? name : name + "#" + std::to_string(occurrences + 1);
    const YAML::Node params = entry["params"];
    if (params && params.IsMap()) {
      for (const auto& kv : params) p.params.emplace_back(text_of(kv.first), text_of(kv.second));
    }
    c.passes.push_back(std::move(p));
  }
  return c;
}

const PassEntry* find_pass(const ParsedConfig& c, const std::string& id) {
  for (const PassEntry& p : c.passes) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

const std::string* find_param(const Params& params, const std::string& key) {
  for (const auto& [k, v] : params) {
    if (k == key) return &v;
  }
  return nullptr;
}

void diff_params(const PassEntry& old_pass, const PassEntry& new_pass,
                 std::vector<std::string>* out) {
  std::vector<std::string> keys;
  for (const auto& kv : new_pass.params) keys.push_back(kv.first);
  for (const auto& kv : old_pass.params) {
    if (!find_param(new_pass.params, kv.first)) keys.push_back(kv.first);
  }
  for (const std::string& key : keys) {
    const std::string* before = find_param(old_pass.params, key);
    const std::string* after = find_param(new_pass.params, key);
    if (before && after && *before == *after) continue;
    out->push_back(new_pass.id + "." + key + ": " + (before ? *before : kDefault) + kArrow +
                   (after ? *after : kDefault));
  }
}

}  // namespace

std::vector<std::string> config_changes(const std::string& old_yaml, const std::string& new_yaml) {
  const ParsedConfig before = parse(old_yaml), after = parse(new_yaml);
  std::vector<std::string> out;
  if (!before.problem.empty() || !after.problem.empty()) {
    if (!before.problem.empty()) out.push_back("old config: " + before.problem);
    if (!after.problem.empty()) out.push_back("new config: " + after.problem);
    return out;
  }
  if (before.target != after.target)
    out.push_back("target: " + before.target + kArrow + after.target);
  std::vector<std::string> common_new_order;
  for (const PassEntry& p : after.passes) {
    const PassEntry* old_pass = find_pass(before, p.id);
    if (old_pass == nullptr) {
      out.push_back("+" + p.id);
      continue;
    }
    common_new_order.push_back(p.id);
    diff_params(*old_pass, p, &out);
  }
  std::vector<std::string> common_old_order;
  for (const PassEntry& p : before.passes) {
    if (find_pass(after, p.id) == nullptr) {
      out.push_back("-" + p.id);
    } else {
      common_old_order.push_back(p.id);
    }
  }
  if (common_old_order != common_new_order) out.push_back("pass order");
  return out;
}

std::string join_changes(const std::vector<std::string>& changes) {
  std::string out;
  for (size_t i = 0; i < changes.size(); ++i) out += (i ? "; " : "") + changes[i];
  return out;
}

}  // namespace cuvil::reports::dashboard
