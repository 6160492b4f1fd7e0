// Reading the one YAML document a cuvil file holds (.cuvilpass, search spaces, ladders): a
// malformed file, a second document after "---" (yaml-cpp's Load would silently ignore it) and
// a key given twice in any mapping (where the last would silently win) are UserErrors
// "SOURCE:LINE: yaml: message".
#pragma once

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"

namespace cuvil::passes {

inline int yaml_line(const YAML::Mark& mark) {
  return mark.is_null() ? 1 : mark.line + 1;
}

// Every mapping in `node`, however deep, has distinct keys (walked iteratively).
inline void check_unique_keys(const YAML::Node& root, const std::string& source) {
  std::vector<YAML::Node> stack = {root};
  while (!stack.empty()) {
    const YAML::Node node = stack.back();
    stack.pop_back();
    if (node.IsMap()) {
      std::set<std::string> seen;
      for (const auto& kv : node) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        if (kv.first.IsScalar() && !seen.insert(key).second) {
          throw UserError(source + ":" + std::to_string(yaml_line(kv.first.Mark())) + ": " + key +
                          ": given twice in one mapping (the second would silently replace the "
                          "first)");
        }
        stack.push_back(kv.second);
      }
    } else if (node.IsSequence()) {
      for (const auto& item : node) stack.push_back(item);
    }
  }
}

// Where each document starts, from yaml-cpp's event parser; nothing else is kept.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

inline YAML::Node load_one_document(const std::string& text, const std::string& source) {
  YAML::Node root;
  DocumentStarts documents;
  try {
    root = YAML::Load(text);
    // At most two documents are asked for: yaml-cpp 0.7's LoadAll can go on making empty
    // documents forever on some malformed input (found by fuzz_cuvilpass).
    std::istringstream in(text);
    YAML::Parser parser(in);
    for (int k = 0; k < 2 && parser.HandleNextDocument(documents); ++k) {
    }
  } catch (const YAML::Exception& e) {
    throw UserError(source + ":" + std::to_string(yaml_line(e.mark)) +
                    ": yaml: malformed YAML: " + e.msg);
  }
  if (documents.starts.size() > 1) {
    throw UserError(source + ":" + std::to_string(yaml_line(documents.starts[1])) +
                    ": yaml: a second YAML document follows the first; the file must hold one");
  }
  check_unique_keys(root, source);
  return root;
}

}  // namespace cuvil::passes
