#include "reports/json_input.h"

#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"
#include "reports/printable.h"

namespace cuvil::reports {

namespace {

using nlohmann::json;

// nlohmann::json's own DOM builder, less its throwing, plus where each value goes: on an error
// the pointer of the value being read names the place (and the depth is bounded, so nothing
// recursive ever sees a pathological document).
class DomBuilder {
 public:
  json root;
  std::string error;  // set when parsing stopped
  bool out_of_range = false;
  bool too_deep = false;  // the pointer would be hundreds of "/0": the depth says it all

  bool null() { return add(nullptr); }
  bool boolean(bool v) { return add(v); }
  bool number_integer(json::number_integer_t v) { return add(v); }
  bool number_unsigned(json::number_unsigned_t v) { return add(v); }
  bool number_float(json::number_float_t v, const std::string&) { return add(v); }
  bool string(std::string& v) { return add(std::move(v)); }
  bool binary(json::binary_t&) { return add(nullptr); }  // JSON text has no binary values
  bool start_object(size_t) { return open(json::object()); }
  bool start_array(size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    open_.back().key = std::move(k);
    return true;
  }

  bool parse_error(size_t, const std::string& token, const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // out_of_range: "number overflow parsing '1e999'"
      out_of_range = true;
      error = "the number " + token + " is out of range (beyond a double)";
      return false;
    }
    error = e.what();
    // nlohmann's message already says where ("parse error at line L, column C: ..."); drop its
    // "[json.exception.parse_error.N] " prefix.
    const size_t bracket = error.find("] ");
    if (bracket != std::string::npos) error = error.substr(bracket + 2);
    return false;
  }

  // The pointer of the value being read (or the last one read) when parsing stopped.
  std::string pointer() const {
    std::string out;
    for (size_t i = 0; i < open_.size(); ++i) {
      const Open& o = open_[i];
      if (o.container->is_array()) {
        // An array holding an open container has it as its last element; the innermost one
        // was reading its next.
        const size_t size = o.container->size();
        // Appended piecewise, not "/" + ...: g++ 12 warns falsely (-Wrestrict) on that.
        out += '/';
        out += std::to_string(i + 1 < open_.size() && size > 0 ? size - 1 : size);
      } else if (o.key) {
        out += '/';
        out += json_pointer_token(*o.key);
      }
    }
    return out;
  }

 private:
  struct Open {
    json* container;
    std::optional<std::string> key;  // objects: the member being read
  };

  // Where the next value goes.
  json* slot() {
    if (open_.empty()) return &root;
    Open& top = open_.back();
    if (top.container->is_array()) {
      top.container->push_back(nullptr);
      return &top.container->back();
    }
    return &(*top.container)[*top.key];
  }

  template <typename V>
  bool add(V&& v) {
    *slot() = std::forward<V>(v);
    if (!open_.empty() && open_.back().container->is_object()) open_.back().key.reset();
    return true;
  }

  bool open(json empty) {
    if (open_.size() >= kMaxJsonDepth) {
      out_of_range = true;
      too_deep = true;
      error = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
      return false;
    }
    json* at = slot();
    *at = std::move(empty);
    open_.push_back({at, std::nullopt});
    return true;
  }

  bool close() {
    open_.pop_back();
    if (!open_.empty() && open_.back().container->is_object()) open_.back().key.reset();
    return true;
  }

  std::vector<Open> open_;
};

std::string with_article(const char* type) {
  if (std::string_view(type) == "null") return "null";
  const char c = type[0];
  const bool vowel = c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
  return std::string(vowel ? "an " : "a ") + type;
}

}  // namespace

std::string json_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

json parse_json(const std::string& text, const std::string& source) {
  DomBuilder builder;
  if (json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true)) {
    return std::move(builder.root);
  }
  if (builder.out_of_range) {
    const std::string where = builder.too_deep ? "" : builder.pointer();
    throw UserError(printable(source + (where.empty() ? "" : ": " + where) + ": " + builder.error));
  }
  const std::string near = builder.pointer();
  throw UserError(printable(source + ": malformed JSON: " + builder.error +
                            (near.empty() ? "" : " (near " + near + ")")));
}

std::string JsonInput::where() const {
  return pointer_.empty() ? *source_ : *source_ + ": " + pointer_;
}

void JsonInput::fail(const std::string& message) const {
  throw UserError(printable(where() + ": " + message));
}

std::string JsonInput::quoted() const {
  constexpr size_t kLongest = 60;
  std::string text = value_->dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kLongest) text = text.substr(0, kLongest - 3) + "...";
  return text;
}

const JsonInput& JsonInput::expect_object() const {
  if (!value_->is_object()) {
    fail("expected an object, got " + with_article(value_->type_name()));
  }
  return *this;
}

const JsonInput& JsonInput::expect_array() const {
  if (!value_->is_array()) fail("expected an array, got " + with_article(value_->type_name()));
  return *this;
}

std::optional<JsonInput> JsonInput::find(std::string_view key) const {
  expect_object();
  const auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonInput(*it, source_, pointer_ + "/" + json_pointer_token(key));
}

JsonInput JsonInput::at(std::string_view key) const {
  std::optional<JsonInput> member = find(key);
  if (!member) fail("missing '" + std::string(key) + "'");
  return *member;
}

std::optional<JsonInput> JsonInput::find_non_null(std::string_view key) const {
  std::optional<JsonInput> member = find(key);
  if (member && member->is_null()) return std::nullopt;
  return member;
}

size_t JsonInput::size() const {
  expect_array();
  return value_->size();
}

JsonInput JsonInput::operator[](size_t index) const {
  expect_array();
  if (index >= value_->size()) fail("has no element " + std::to_string(index));
  return JsonInput((*value_)[index], source_, pointer_ + "/" + std::to_string(index));
}

std::string JsonInput::string() const {
  if (!value_->is_string()) fail("expected a string, got " + with_article(value_->type_name()));
  return value_->get<std::string>();
}

bool JsonInput::boolean() const {
  if (!value_->is_boolean()) {
    fail("expected true or false, got " + with_article(value_->type_name()) + " " + quoted());
  }
  return value_->get<bool>();
}

double JsonInput::number() const {
  if (!value_->is_number()) fail("expected a number, got " + with_article(value_->type_name()));
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("the number " + quoted() + " is out of range (not finite)");
  return v;
}

double JsonInput::non_negative() const {
  const double v = number();
  if (v < 0) fail("expected a number >= 0, got " + quoted());
  return v;
}

int64_t JsonInput::integer(int64_t min, int64_t max) const {
  const std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!value_->is_number()) {
    fail("expected an integer in " + range + ", got " + with_article(value_->type_name()));
  }
  int64_t v = 0;
  bool fits = false;
  if (value_->is_number_unsigned()) {
    const uint64_t u = value_->get<uint64_t>();
    fits = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    v = static_cast<int64_t>(u);
  } else if (value_->is_number_integer()) {
    v = value_->get<int64_t>();
    fits = true;
  } else {
    const double d = value_->get<double>();
    if (std::isfinite(d) && std::floor(d) != d) fail("expected an integer, got " + quoted());
    // 2^63 itself does not fit; every double below it that is integral does.
    fits = std::isfinite(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
    if (fits) v = static_cast<int64_t>(d);
  }
  if (!fits || v < min || v > max) fail("the integer " + quoted() + " is out of range " + range);
  return v;
}

std::string JsonInput::string_or(std::string_view key, const std::string& fallback) const {
  const std::optional<JsonInput> member = find_non_null(key);
  return member ? member->string() : fallback;
}

bool JsonInput::boolean_or(std::string_view key, bool fallback) const {
  const std::optional<JsonInput> member = find_non_null(key);
  return member ? member->boolean() : fallback;
}

}  // namespace cuvil::reports
