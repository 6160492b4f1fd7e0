// Reading JSON documents that come from outside (run.json files, stored run documents): a parser
// that says where a number overflowed, and typed access that says where a field has the wrong
// type or range. Every error is a cuvil::UserError "SOURCE: /json/pointer: message" (the pointer
// as RFC 6901 writes it), with the input it quotes made printable (reports/printable.h).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cuvil::reports {

// Documents nest a few levels; deeper ones are refused before anything recurses over them.
inline constexpr size_t kMaxJsonDepth = 512;

// Parses `text` (named `source` in messages). Malformed JSON is "SOURCE: malformed JSON: parse
// error at line L, column C: ..."; a number beyond a double's range is "SOURCE: /pointer: the
// number 1e999 is out of range"; nesting deeper than kMaxJsonDepth is refused the same way.
nlohmann::json parse_json(const std::string& text, const std::string& source);

// One value inside a document and where it is. It refers to the document, which must outlive
// it (so a temporary document is refused), and keeps the source name.
class JsonInput {
 public:
  JsonInput(const nlohmann::json& root, std::string source)
      : value_(&root), source_(std::make_shared<const std::string>(std::move(source))) {}
  JsonInput(nlohmann::json&& root, std::string source) = delete;

  const nlohmann::json& json() const { return *value_; }
  const std::string& pointer() const { return pointer_; }
  // "SOURCE: /pointer" ("SOURCE" for the root).
  std::string where() const;
  // Throws UserError(where() + ": " + message), made printable.
  [[noreturn]] void fail(const std::string& message) const;

  bool is_null() const { return value_->is_null(); }
  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }

  // Structure. Each fails unless the value is an object (members) or an array (elements).
  const JsonInput& expect_object() const;
  const JsonInput& expect_array() const;
  // The member `key`, or nullopt when absent.
  std::optional<JsonInput> find(std::string_view key) const;
  // The member `key`; absent fails ("missing 'key'").
  JsonInput at(std::string_view key) const;
  // The member `key` unless it is absent or null.
  std::optional<JsonInput> find_non_null(std::string_view key) const;
  size_t size() const;                        // of an array
  JsonInput operator[](size_t index) const;  // an array's element

  // Scalars; the wrong type fails ("expected a string, got number").
  std::string string() const;
  bool boolean() const;
  double number() const;        // finite
  double non_negative() const;  // finite and >= 0
  // An integer (or a number with an integral value) in [min, max].
  int64_t integer(int64_t min, int64_t max) const;

  // Optional members: absent (or null) gives the fallback, anything but the right type fails.
  std::string string_or(std::string_view key, const std::string& fallback) const;
  bool boolean_or(std::string_view key, bool fallback) const;

  // The value, compact, for quoting in messages (long values are cut).
  std::string quoted() const;

 private:
  JsonInput(const nlohmann::json& value, std::shared_ptr<const std::string> source,
            std::string pointer)
      : value_(&value), source_(std::move(source)), pointer_(std::move(pointer)) {}

  const nlohmann::json* value_;
  std::shared_ptr<const std::string> source_;
  std::string pointer_;
};

// `key` as a JSON pointer token: '~' becomes "~0" and '/' becomes "~1".
std::string json_pointer_token(std::string_view key);

}  // namespace cuvil::reports
