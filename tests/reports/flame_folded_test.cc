// Folded stacks: the writer's line format, parsing (round trip, merging) and bad input.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "base/error.h"
#include "reports/flame/folded.h"
#include "reports/flame/op_records.h"
#include "tests/reports/flame_fixture.h"

namespace cuvil::reports::flame {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(FlameFolded, EveryLineIsFramesSeparatedBySemicolonsThenACount) {
  const FrameTree tree =
      tree_from_ops(read_op_records(testing::run_with_ops({testing::resnet_like()}), "r.json"));
  const std::string folded = to_folded(tree);
  ASSERT_FALSE(folded.empty());
  EXPECT_EQ(folded.back(), '\n');
  const std::regex line_format(R"(^[^; ][^;]*(;[^;]+)* [0-9]+$)");
  const auto lines = lines_of(folded);
  EXPECT_EQ(lines.size(), 7u);  // one per op: only kernels carry self time
  for (const std::string& line : lines) {
    EXPECT_TRUE(std::regex_match(line, line_format)) << line;
  }
  EXPECT_EQ(lines[1], "resnet50/b1;layer1;layer1.0;conv2d layer1.0.conv1;conv2d.1x1_gemm 3100");
}

TEST(FlameFolded, RoundTripKeepsEveryStackAndWeight) {
  const std::string text = "main;run;conv 17\nmain;run 3\nmain;idle 1\n";
  const FrameTree tree = parse_folded(text, "s.folded");
  EXPECT_EQ(tree.unit(), "samples");
  EXPECT_DOUBLE_EQ(tree.total(), 21);
  EXPECT_EQ(to_folded(tree), "main;run 3\nmain;run;conv 17\nmain;idle 1\n");
  EXPECT_EQ(to_folded(parse_folded(to_folded(tree), "again")), to_folded(tree));
}

TEST(FlameFolded, RepeatedStacksAddUpAndBlankLinesAreSkipped) {
  const FrameTree tree = parse_folded("a;b 1\n\n  \na;b 2\r\na 7\n", "s.folded");
  EXPECT_DOUBLE_EQ(tree.find({"a", "b"})->self, 3);
  EXPECT_DOUBLE_EQ(tree.find({"a"})->total, 10);
}

TEST(FlameFolded, FrameNamesMayHoldSpaces) {
  const FrameTree tree = parse_folded("std::vector<int> push_back;operator new 5\n", "s");
  EXPECT_NE(tree.find({"std::vector<int> push_back", "operator new"}), nullptr);
}

TEST(FlameFolded, StacksThatRoundToZeroAreLeftOut) {
  FrameTree tree;
  tree.add_stack({"a"}, 0.2);
  tree.add_stack({"b"}, 2.6);
  EXPECT_EQ(to_folded(tree), "b 3\n");
}

TEST(FlameFolded, LineWithoutCountIsAUserErrorNamingTheLine) {
  try {
    parse_folded("a;b 1\na;b\n", "s.folded");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("s.folded:2"), std::string::npos) << e.what();
  }
}

TEST(FlameFolded, NegativeOrTextCountIsAUserError) {
  EXPECT_THROW(parse_folded("a;b -3\n", "s"), UserError);
  EXPECT_THROW(parse_folded("a;b many\n", "s"), UserError);
  EXPECT_THROW(parse_folded("a;b 1e999\n", "s"), UserError);
}

TEST(FlameFolded, EmptyFrameIsAUserError) {
  EXPECT_THROW(parse_folded("a;;b 1\n", "s"), UserError);
  EXPECT_THROW(parse_folded(";a 1\n", "s"), UserError);
}

// Found by fuzzing (tests/fuzz, fuzz_folded): a Latin-1 byte in a frame name read fine, then
// `report flame --format speedscope` died on nlohmann's invalid-UTF-8 type_error (the SVG was
// not well-formed XML either). Frame names must be UTF-8; the message names the line.
TEST(FlameFolded, FrameNameThatIsNotUtf8IsAUserErrorNamingTheLine) {
  for (const std::string bad : {"main;run\xdcgemm 60\n", "caf\xe9 1\n", "a\xc0\xaf 1\n",
                                "a\xed\xa0\x80 1\n", "a\xe2\x82 1\n", "a\xf5\x80\x80\x80 1\n"}) {
    try {
      parse_folded("ok 1\n" + bad, "s.folded");
      FAIL() << "no error for " << bad;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("s.folded:2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
    }
  }
  const FrameTree tree = parse_folded(
      "\xc3\xbc"
      "ber;\xe6\x97\xa5\xe6\x9c\xac;\xf0\x9f\x94\xa5 2\n",
      "s");
  EXPECT_EQ(to_folded(tree),
            "\xc3\xbc"
            "ber;\xe6\x97\xa5\xe6\x9c\xac;\xf0\x9f\x94\xa5 2\n");
}

// Found by fuzzing: two counts of 1e308 each read fine but summed to infinity, and the SVG writer
// then converted the NaN share of every frame to an integer (undefined behaviour).
TEST(FlameFolded, CountsWhoseSumOverflowsAreAUserErrorNamingTheLine) {
  try {
    parse_folded("a 1e308\nb 1e308\n", "s.folded");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("s.folded:2"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(parse_folded("a 1e308\nb 1e307\n", "s"));
}

TEST(FlameFolded, MissingFileIsAUserError) {
  EXPECT_THROW(read_folded_file("/nonexistent/cuvil/stacks.folded"), UserError);
}

}  // namespace
}  // namespace cuvil::reports::flame
