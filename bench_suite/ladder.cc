#include "bench_suite/ladder.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/error.h"
#include "passes/yaml_document.h"

namespace cuvil::bench {

int64_t Rung::param(const std::string& key, int64_t fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : it->second;
}

namespace {

[[noreturn]] void fail(const std::string& source, const YAML::Mark& mark, const std::string& field,
                       const std::string& message) {
  const int line = mark.line >= 0 ? mark.line + 1 : 0;
  throw UserError(source + ":" + std::to_string(line) + ": " + field + ": " + message);
}

int64_t read_int(const std::string& source, const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar()) fail(source, node.Mark(), field, "expected an integer");
  const std::string text = node.Scalar();
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    fail(source, node.Mark(), field, "expected an integer, got '" + text + "'");
  }
  return value;
}

}  // namespace

Ladder load_ladder(const std::string& path, const std::vector<std::string>& allowed_keys) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(path + ": is a directory, not a ladder file");
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open ladder file");
  std::stringstream text;
  text << in.rdbuf();
  const YAML::Node root = passes::load_one_document(text.str(), path);
  if (!root.IsMap())
    fail(path, root.Mark(), "<root>", "expected a mapping with 'suite' and 'rungs'");
  Ladder ladder;
  ladder.source = path;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key == "suite") {
      ladder.suite = kv.second.Scalar();
    } else if (key != "rungs") {
      fail(path, kv.first.Mark(), key, "unknown key (expected suite, rungs)");
    }
  }
  const YAML::Node rungs = root["rungs"];
  if (!rungs || !rungs.IsSequence() || rungs.size() == 0) {
    fail(path, root.Mark(), "rungs", "expected a non-empty list of rungs");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < rungs.size(); ++i) {
    const YAML::Node r = rungs[i];
    const std::string where = "rungs[" + std::to_string(i) + "]";
    if (!r.IsMap()) fail(path, r.Mark(), where, "expected a mapping");
    Rung rung;
    for (const auto& kv : r) {
      const std::string key = kv.first.Scalar();
      const std::string field = where + "." + key;
      if (key == "name") {
        rung.name = kv.second.Scalar();
      } else if (key == "default") {
        if (!kv.second.IsScalar() ||
            (kv.second.Scalar() != "true" && kv.second.Scalar() != "false")) {
          fail(path, kv.second.Mark(), field, "expected true or false");
        }
        rung.is_default = kv.second.Scalar() == "true";
      } else if (std::find(allowed_keys.begin(), allowed_keys.end(), key) != allowed_keys.end()) {
        const int64_t v = read_int(path, kv.second, field);
        if (v < 0) fail(path, kv.second.Mark(), field, "must be >= 0");
        rung.params[key] = v;
      } else {
        std::string known = "name, default";
        for (const auto& k : allowed_keys) known += ", " + k;
        fail(path, kv.first.Mark(), field,
             "unknown rung parameter (expected one of " + known + ")");
      }
    }
    if (rung.name.empty()) fail(path, r.Mark(), where + ".name", "every rung needs a name");
    if (!names.insert(rung.name).second) {
      fail(path, r.Mark(), where + ".name", "rung '" + rung.name + "' is listed twice");
    }
    ladder.rungs.push_back(std::move(rung));
  }
  return ladder;
}

std::vector<Rung> select_rungs(const Ladder& ladder, const std::string& selection) {
  std::vector<Rung> picked;
  if (selection.empty()) {
    for (const Rung& r : ladder.rungs) {
      if (r.is_default) picked.push_back(r);
    }
    return picked;
  }
  if (selection == "all") return ladder.rungs;
  std::set<std::string> wanted;
  std::stringstream ss(selection);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    const bool known = std::any_of(ladder.rungs.begin(), ladder.rungs.end(),
                                   [&](const Rung& r) { return r.name == name; });
    if (!known) {
      std::string list;
      for (const Rung& r : ladder.rungs) list += (list.empty() ? "" : ", ") + r.name;
      throw UserError(ladder.source + ": --rungs: unknown rung '" + name + "' for suite " +
                      ladder.suite + " (known: " + list + ")");
    }
    wanted.insert(name);
  }
  if (wanted.empty()) {
    throw UserError("--rungs: '" + selection + "' names no rung (give names, or all)");
  }
  for (const Rung& r : ladder.rungs) {
    if (wanted.count(r.name)) picked.push_back(r);
  }
  return picked;
}

std::string config_dir() {
  if (const char* env = std::getenv("CUVIL_CONFIG_DIR"); env && *env) return env;
  return std::string(CUVIL_SOURCE_DIR) + "/configs";
}

}  // namespace cuvil::bench
