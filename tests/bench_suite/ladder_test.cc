#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "base/error.h"
#include "bench_suite/ladder.h"
#include "bench_suite/suites.h"

namespace cuvil::bench {
namespace {

const std::vector<std::string> kKeys = {"batch", "image"};

std::string write_temp(const std::string& text) {
  static int counter = 0;
  // ctest runs each test in its own process, in parallel: the pid keeps their files apart.
  const std::string path = ::testing::TempDir() + "ladder_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++) + ".yaml";
  std::ofstream(path) << text;
  return path;
}

// Expects load_ladder to throw a UserError whose message names the file, line and field.
void expect_error(const std::string& text, int line, const std::string& field) {
  const std::string path = write_temp(text);
  try {
    load_ladder(path, kKeys);
    FAIL() << "expected a UserError for:\n" << text;
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path + ":" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
  }
}

TEST(Ladder, ParsesRungsInOrderWithDefaults) {
  const std::string path = write_temp(
      "suite: resnet50\nrungs:\n  - name: b1\n    batch: 1\n  - name: b64\n    batch: 64\n"
      "    default: false\n");
  const Ladder ladder = load_ladder(path, kKeys);
  ASSERT_EQ(ladder.rungs.size(), 2u);
  EXPECT_EQ(ladder.rungs[0].name, "b1");
  EXPECT_EQ(ladder.rungs[1].param("batch", 0), 64);
  EXPECT_FALSE(ladder.rungs[1].is_default);
  EXPECT_EQ(select_rungs(ladder, "").size(), 1u);
  EXPECT_EQ(select_rungs(ladder, "all").size(), 2u);
  EXPECT_EQ(select_rungs(ladder, "b64,b1")[0].name, "b1");  // ladder order, light to heavy
}

TEST(Ladder, RejectsMalformedYaml) {
  expect_error("suite: x\nrungs: [\n  - name: a\n", 3, "yaml");
}

TEST(Ladder, RejectsUnknownRungParameter) {
  expect_error("suite: x\nrungs:\n  - name: a\n    bacth: 1\n", 4, "rungs[0].bacth");
}

TEST(Ladder, RejectsNonIntegerValue) {
  expect_error("suite: x\nrungs:\n  - name: a\n    batch: four\n", 4, "rungs[0].batch");
}

TEST(Ladder, RejectsDuplicateRung) {
  expect_error("suite: x\nrungs:\n  - name: a\n  - name: a\n", 4, "rungs[1].name");
}

TEST(Ladder, RejectsUnknownTopLevelKey) {
  expect_error("suite: x\nrung: []\n", 2, "rung");
}

TEST(Ladder, RejectsMissingFile) {
  EXPECT_THROW(load_ladder("/nonexistent/ladder.yaml", kKeys), UserError);
}

TEST(Ladder, SelectRejectsUnknownRung) {
  const Ladder ladder = load_ladder(write_temp("suite: x\nrungs:\n  - name: b1\n"), kKeys);
  EXPECT_THROW(select_rungs(ladder, "b2"), UserError);
}

TEST(Suites, ShippedLaddersLoad) {
  for (const Suite& suite : suites()) {
    const Ladder ladder = load_suite_ladder(suite);
    EXPECT_FALSE(select_rungs(ladder, "").empty()) << suite.name;
  }
}

TEST(Suites, UnknownSuiteIsAUserError) {
  EXPECT_THROW(find_suite("resnet51"), UserError);
}

}  // namespace
}  // namespace cuvil::bench
