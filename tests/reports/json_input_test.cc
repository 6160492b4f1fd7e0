// Reading outside JSON: parse errors and overflowing numbers named by their JSON pointer, the
// depth bound, and typed access with its messages.
#include "reports/json_input.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "base/error.h"
#include "tests/base/user_error_of.h"

namespace cuvil::reports {
namespace {

using nlohmann::json;

TEST(ParseJson, ReadsWhatNlohmannReads) {
  const std::string text =
      R"({"a": [1, -2, 3.5, "x", true, null, {"b": []}], "c": {"d/e": 18446744073709551615}})";
  EXPECT_EQ(parse_json(text, "t"), json::parse(text));
}

TEST(ParseJson, AnOverflowingNumberIsNamedByItsPointer) {
  EXPECT_EQ(user_error_of([] {
              parse_json(R"({"benchmarks":[{"name":"x/y","real_time":1e999}]})", "run.json");
            }),
            "run.json: /benchmarks/0/real_time: the number 1e999 is out of range (beyond a "
            "double)");
  EXPECT_EQ(user_error_of([] { parse_json(R"([[0, 1], [2, {"a~b/c": -1e400}]])", "t"); }),
            "t: /1/1/a~0b~1c: the number -1e400 is out of range (beyond a double)");
  EXPECT_EQ(user_error_of([] { parse_json("[1, 2, 1e999]", "t"); }),
            "t: /2: the number 1e999 is out of range (beyond a double)");
  EXPECT_EQ(user_error_of([] { parse_json("1e999", "t"); }),
            "t: the number 1e999 is out of range (beyond a double)");
}

TEST(ParseJson, MalformedJsonSaysWhereAsNlohmannDoes) {
  const std::string message = user_error_of([] { parse_json("{\"a\": [1,\n 2,, 3]}", "f.json"); });
  EXPECT_EQ(message.rfind("f.json: malformed JSON: parse error at line 2, column 4", 0), 0u)
      << message;
  EXPECT_NE(message.find("(near /a/2)"), std::string::npos) << message;
  EXPECT_NE(user_error_of([] { parse_json("", "e.json"); }).find("e.json: malformed JSON"),
            std::string::npos);
  EXPECT_NE(user_error_of([] { parse_json("[1] 2", "t"); }).find("malformed JSON"),
            std::string::npos);
}

TEST(ParseJson, DeepNestingIsRefusedWithoutRecursing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string message = user_error_of([&] { parse_json(deep, "deep.json"); });
  // Named by file and depth: a pointer of 512 "/0" would bury the message.
  EXPECT_EQ(message, "deep.json: nested deeper than 512 levels");
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_NO_THROW(parse_json(ok, "t"));
}

TEST(ParseJson, ControlCharactersInKeysAreEscapedInMessages) {
  const std::string message =
      user_error_of([] { parse_json("{\"a\\u001b[31m\\n\": 1e999}", "t"); });
  EXPECT_EQ(message, "t: /a\\x1b[31m\\x0a: the number 1e999 is out of range (beyond a double)");
}

TEST(JsonInput, TypeMismatchesNameThePointerAndTheType) {
  const json doc = json::parse(R"({"b": [{"run_type": 7, "ok": "x", "e": "yes", "n": null}]})");
  const JsonInput root(doc, "d.json");
  const JsonInput entry = root.at("b")[0];
  EXPECT_EQ(entry.pointer(), "/b/0");
  EXPECT_EQ(entry.at("ok").string(), "x");
  EXPECT_EQ(user_error_of([&] { entry.at("run_type").string(); }),
            "d.json: /b/0/run_type: expected a string, got a number");
  EXPECT_EQ(user_error_of([&] { entry.boolean_or("e", false); }),
            "d.json: /b/0/e: expected true or false, got a string \"yes\"");
  EXPECT_EQ(user_error_of([&] { entry.at("missing"); }), "d.json: /b/0: missing 'missing'");
  EXPECT_EQ(user_error_of([&] { root.at("b").at("x"); }),
            "d.json: /b: expected an object, got an array");
  EXPECT_EQ(user_error_of([&] { entry.at("n").number(); }),
            "d.json: /b/0/n: expected a number, got null");
  EXPECT_EQ(entry.string_or("n", "fallback"), "fallback");  // null reads as absent
  EXPECT_EQ(user_error_of([&] { root.at("b")[3]; }), "d.json: /b: has no element 3");
}

TEST(JsonInput, NumbersMustBeFiniteAndInRange) {
  json doc = {{"nan", std::nan("")},
              {"neg", -1.5},
              {"big", 1e300},
              {"frac", 2.5},
              {"int", 7},
              {"u", 18446744073709551615ull},
              {"two63", 9223372036854775808.0},
              {"intf", 3.0}};
  const JsonInput root(doc, "n");
  EXPECT_NE(user_error_of([&] { root.at("nan").number(); }).find("n: /nan: the number"),
            std::string::npos);
  EXPECT_EQ(user_error_of([&] { root.at("neg").non_negative(); }),
            "n: /neg: expected a number >= 0, got -1.5");
  EXPECT_EQ(root.at("int").integer(0, 10), 7);
  EXPECT_EQ(root.at("intf").integer(0, 10), 3);
  EXPECT_EQ(user_error_of([&] { root.at("int").integer(0, 5); }),
            "n: /int: the integer 7 is out of range [0, 5]");
  EXPECT_EQ(user_error_of([&] { root.at("frac").integer(0, 5); }),
            "n: /frac: expected an integer, got 2.5");
  EXPECT_NE(user_error_of([&] { root.at("big").integer(0, INT64_MAX); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(user_error_of([&] { root.at("u").integer(0, INT64_MAX); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(
      user_error_of([&] { root.at("two63").integer(INT64_MIN, INT64_MAX); }).find("out of range"),
      std::string::npos);
}

TEST(JsonInput, PointerTokensEscapeTildeAndSlash) {
  EXPECT_EQ(json_pointer_token("GFLOP/s"), "GFLOP~1s");
  EXPECT_EQ(json_pointer_token("a~b"), "a~0b");
  const json doc = {{"GFLOP/s", "fast"}};
  EXPECT_EQ(user_error_of([&] { JsonInput(doc, "s").at("GFLOP/s").number(); }),
            "s: /GFLOP~1s: expected a number, got a string");
}

}  // namespace
}  // namespace cuvil::reports
