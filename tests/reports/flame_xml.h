// A minimal XML parser for the flame-graph tests: checks well-formedness (one root, balanced
// and matching tags, quoted and unique attributes, valid entity and character references, no
// '<' in attribute values, comments, CDATA and processing instructions closed) and returns the
// element tree. Not a general XML library: no DTDs, no namespaces beyond names with ':'.
#pragma once

#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cuvil::reports::flame::testing {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::vector<std::unique_ptr<XmlElement>> children;
  std::string text;  // character data directly inside, references decoded, CDATA included

  const XmlElement* first(const std::string& child_name) const {
    for (const auto& c : children) {
      if (c->name == child_name) return c.get();
    }
    return nullptr;
  }
  std::string attr(const std::string& key) const {
    const auto it = attributes.find(key);
    return it == attributes.end() ? "" : it->second;
  }
};

class XmlParser {
 public:
  // Throws std::runtime_error with the offset on the first violation.
  static std::unique_ptr<XmlElement> parse(const std::string& text) {
    XmlParser p(text);
    return p.document();
  }

 private:
  explicit XmlParser(const std::string& text) : s_(text) {}

  [[noreturn]] void error(const std::string& what) const {
    throw std::runtime_error("XML error at offset " + std::to_string(i_) + ": " + what);
  }
  bool starts(const char* prefix) const { return s_.compare(i_, std::strlen(prefix), prefix) == 0; }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void skip_past(const char* terminator) {
    const size_t end = s_.find(terminator, i_);
    if (end == std::string::npos) error(std::string("unterminated, expected ") + terminator);
    i_ = end + std::strlen(terminator);
  }
  static bool name_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
  }
  std::string name() {
    if (i_ >= s_.size() || !name_start(s_[i_])) error("expected a name");
    const size_t start = i_;
    while (i_ < s_.size() &&
           (name_start(s_[i_]) || std::isdigit(static_cast<unsigned char>(s_[i_])) ||
            s_[i_] == '-' || s_[i_] == '.')) {
      ++i_;
    }
    return s_.substr(start, i_ - start);
  }
  // After '&': a predefined entity or a character reference.
  std::string reference() {
    const size_t semi = s_.find(';', i_);
    if (semi == std::string::npos || semi - i_ > 10) error("bad reference");
    const std::string ref = s_.substr(i_, semi - i_);
    i_ = semi + 1;
    static const std::map<std::string, std::string> entities = {
        {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
    if (entities.count(ref)) return entities.at(ref);
    const bool hex = ref.size() > 2 && ref[0] == '#' && ref[1] == 'x';
    const bool dec = ref.size() > 1 && ref[0] == '#' && !hex;
    const std::string digits = ref.substr(hex ? 2 : 1);
    for (const char c : digits) {
      if (!(hex ? std::isxdigit(static_cast<unsigned char>(c))
                : std::isdigit(static_cast<unsigned char>(c)))) {
        error("unknown entity &" + ref + ";");
      }
    }
    if (!hex && !dec) error("unknown entity &" + ref + ";");
    return "?";  // the tests never look at referenced characters
  }
  void character_data_checks(char c) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      error("control character");
    }
  }
  void misc() {  // comments, processing instructions and space outside the root
    while (true) {
      skip_space();
      if (starts("<?")) {
        skip_past("?>");
      } else if (starts("<!--")) {
        skip_past("-->");
      } else if (starts("<!DOCTYPE")) {
        error("DOCTYPE not expected");
      } else {
        return;
      }
    }
  }
  std::unique_ptr<XmlElement> document() {
    misc();
    if (!starts("<")) error("expected the root element");
    auto root = element();
    misc();
    if (i_ != s_.size()) error("content after the root element");
    return root;
  }
  std::unique_ptr<XmlElement> element() {
    ++i_;  // '<'
    auto e = std::make_unique<XmlElement>();
    e->name = name();
    while (true) {
      const size_t before = i_;
      skip_space();
      if (starts("/>")) {
        i_ += 2;
        return e;
      }
      if (starts(">")) {
        ++i_;
        break;
      }
      if (i_ == before) error("expected space before an attribute");
      const std::string key = name();
      skip_space();
      if (!starts("=")) error("attribute without '='");
      ++i_;
      skip_space();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) error("unquoted attribute");
      const char quote = s_[i_++];
      std::string value;
      while (i_ < s_.size() && s_[i_] != quote) {
        if (s_[i_] == '<') error("'<' in an attribute value");
        if (s_[i_] == '&') {
          ++i_;
          value += reference();
        } else {
          character_data_checks(s_[i_]);
          value += s_[i_++];
        }
      }
      if (i_ >= s_.size()) error("unterminated attribute value");
      ++i_;
      if (!e->attributes.emplace(key, value).second) error("duplicate attribute " + key);
    }
    while (true) {  // content
      if (i_ >= s_.size()) error("unclosed element <" + e->name + ">");
      if (starts("</")) {
        i_ += 2;
        if (name() != e->name) error("mismatched end tag for <" + e->name + ">");
        skip_space();
        if (!starts(">")) error("bad end tag");
        ++i_;
        return e;
      }
      if (starts("<![CDATA[")) {
        i_ += 9;
        const size_t end = s_.find("]]>", i_);
        if (end == std::string::npos) error("unterminated CDATA");
        e->text += s_.substr(i_, end - i_);
        i_ = end + 3;
      } else if (starts("<!--")) {
        skip_past("-->");
      } else if (starts("<?")) {
        skip_past("?>");
      } else if (starts("<")) {
        e->children.push_back(element());
      } else if (s_[i_] == '&') {
        ++i_;
        e->text += reference();
      } else {
        if (starts("]]>")) error("']]>' in character data");
        character_data_checks(s_[i_]);
        e->text += s_[i_++];
      }
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace cuvil::reports::flame::testing
