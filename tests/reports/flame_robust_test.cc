// The flame readers and writers on hostile input: fields of the wrong type named by their JSON
// pointer, samples files outside the run's folder, and trees thousands of frames deep (built,
// written in every format and destroyed without recursion, in memory linear in the input).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "base/error.h"
#include "reports/flame/flame_svg.h"
#include "reports/flame/folded.h"
#include "reports/flame/op_records.h"
#include "reports/flame/speedscope.h"
#include "tests/base/user_error_of.h"
#include "tests/reports/flame_fixture.h"
#include "tests/reports/run_json_fixture.h"

namespace cuvil::reports::flame {
namespace {

using testing::resnet_like;
using testing::run_with_ops;

std::string ops_error(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json doc = run_with_ops({resnet_like()});
  edit(doc);
  return user_error_of([&] {
    has_op_records(doc, "r.json");
    read_op_records(doc, "r.json");
  });
}

TEST(FlameRobust, FieldsOfTheWrongTypeAreUserErrorsNamingTheirPointer) {
  EXPECT_EQ(
      ops_error([](auto& d) { d["benchmarks"][1]["cuvil"]["ops"]["records"][2]["lowering"] = 3; }),
      "r.json: /benchmarks/1/cuvil/ops/records/2/lowering: expected a string, got a number");
  EXPECT_EQ(ops_error([](auto& d) { d["benchmarks"][0]["run_type"] = 7; }),
            "r.json: /benchmarks/0/run_type: expected a string, got a number");
  EXPECT_EQ(ops_error([](auto& d) { d["benchmarks"][1]["aggregate_name"] = false; }),
            "r.json: /benchmarks/1/aggregate_name: expected a string, got a boolean");
  EXPECT_EQ(
      ops_error([](auto& d) { d["benchmarks"][1]["cuvil"]["ops"]["records"][0]["kernel"] = 1; }),
      "r.json: /benchmarks/1/cuvil/ops/records/0/kernel: expected a string, got a number");
  EXPECT_EQ(ops_error([](auto& d) {
              d["benchmarks"][1]["cuvil"]["ops"]["records"][0]["node"] = nullptr;
            }),
            "r.json: /benchmarks/1/cuvil/ops/records/0/node: expected a string, got null");
  EXPECT_EQ(
      ops_error([](auto& d) { d["benchmarks"][1]["cuvil"]["ops"]["records"][0]["step"] = 1e300; }),
      "r.json: /benchmarks/1/cuvil/ops/records/0/step: the integer 1e+300 is out of range [0, "
      "9223372036854775807]");
  EXPECT_EQ(ops_error([](auto& d) { d["benchmarks"][1]["cuvil"]["ops"]["iterations"] = "17"; }),
            "r.json: /benchmarks/1/cuvil/ops/iterations: expected a number, got a string");
  EXPECT_EQ(ops_error([](auto& d) { d["benchmarks"][1]["cuvil"] = "ops"; }),
            "r.json: /benchmarks/1/cuvil: expected an object, got a string");
  EXPECT_EQ(ops_error([](auto& d) { d["benchmarks"] = 5; }),
            "r.json: /benchmarks: expected an array, got a number");
  EXPECT_EQ(ops_error([](auto& d) { d["benchmarks"][1]["cuvil"]["samples_file"] = 1; }), "");
  nlohmann::json doc = run_with_ops({resnet_like()});
  doc["benchmarks"][1]["cuvil"]["samples_file"] = 1;
  EXPECT_EQ(user_error_of([&] { samples_file_of(doc, "r.json"); }),
            "r.json: /benchmarks/1/cuvil/samples_file: expected a string, got a number");
}

TEST(FlameRobust, TimesThatAddUpBeyondADoubleAreUserErrors) {
  EXPECT_EQ(ops_error([](auto& d) {
              for (auto& r : d["benchmarks"][1]["cuvil"]["ops"]["records"])
                r["ns_per_iteration"] = 1e308;
            }),
            "r.json: /benchmarks/1/cuvil/ops/records/1: the times add up beyond a double's range");
  EXPECT_NE(user_error_of([] {
              parse_folded("a 1e308\nb 1e308\n", "s.folded");
            }).find("s.folded:2: the counts add up"),
            std::string::npos);
}

TEST(FlameRobust, ControlCharactersInQuotedInputAreEscaped) {
  const std::string message =
      user_error_of([] { read_op_records(run_with_ops({resnet_like()}), "r.json", "b\x1b[2J\n"); });
  EXPECT_NE(message.find("no rung 'b\\x1b[2J\\x0a'"), std::string::npos) << message;
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
  const std::string folded = user_error_of([] { parse_folded("a;b \x1b[31m\n", "s.folded"); });
  EXPECT_EQ(folded, "s.folded:1: the count '\\x1b[31m' is not a non-negative number");
}

// A scratch folder holding a run.json, and a file outside it.
class SamplesFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.file("run/sub"));
    std::ofstream(dir_.file("run/run.json")) << "{}";
    std::ofstream(dir_.file("run/run.json.folded")) << "a 1\n";
    std::ofstream(dir_.file("run/sub/s.folded")) << "a 1\n";
    std::ofstream(dir_.file("secret.folded")) << "a 1\n";
  }
  std::string resolve(const std::string& named) {
    return resolve_samples_file({named, "run.json: /benchmarks/1/cuvil/samples_file"},
                                dir_.file("run/run.json"));
  }
  std::string error(const std::string& named) {
    return user_error_of([&] { resolve(named); });
  }
  reports::testing::ScratchDir dir_;
};

TEST_F(SamplesFileTest, RelativeNamesAreTakenFromTheRunsFolder) {
  EXPECT_EQ(resolve("run.json.folded"), dir_.file("run/run.json.folded"));
  EXPECT_EQ(resolve("sub/s.folded"), dir_.file("run/sub/s.folded"));
  // `run --out DIR/run.json` names DIR/run.json.folded from where it ran.
  EXPECT_EQ(resolve("elsewhere/run.json.folded"), dir_.file("run/run.json.folded"));
  // An absolute name of a file in the folder (`run --out /abs/run.json`) is that file.
  EXPECT_EQ(resolve(dir_.file("run/run.json.folded")), dir_.file("run/run.json.folded"));
}

TEST_F(SamplesFileTest, NamesLeadingOutOfTheFolderAreRefused) {
  for (const std::string& named :
       {dir_.file("secret.folded"), std::string("/etc/passwd"), std::string("../secret.folded"),
        std::string("sub/../../secret.folded")}) {
    const std::string message = error(named);
    EXPECT_NE(message.find("run.json: /benchmarks/1/cuvil/samples_file: '" + named +
                           "' leads outside the run's folder"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("--folded"), std::string::npos) << message;
  }
  std::filesystem::create_symlink(dir_.file("secret.folded"), dir_.file("run/link.folded"));
  EXPECT_NE(error("link.folded").find("leads outside"), std::string::npos);
  EXPECT_NE(error("missing.folded").find("'missing.folded' is not a file in the run's folder"),
            std::string::npos);
  EXPECT_NE(error("").find("is empty"), std::string::npos);
}

// A chain `depth` frames deep: f0;f1;...
std::vector<std::string> chain(size_t depth) {
  std::vector<std::string> path;
  for (size_t i = 0; i < depth; ++i) {
    std::string name = "f";
    name += std::to_string(i % 10);
    path.push_back(std::move(name));
  }
  return path;
}

TEST(FlameRobust, DeepTreesAreBuiltAnnotatedAndDestroyedWithoutRecursion) {
  constexpr size_t kDepth = 200000;  // recursion over this would take far more than 8 MB of stack
  {
    FrameTree tree("all", "samples");
    tree.add_stack(chain(kDepth), 3);
    tree.add_stack(chain(kDepth / 2), 1);
    EXPECT_EQ(tree.depth(), kDepth);
    FrameTree base("all", "samples");
    base.add_stack(chain(kDepth), 2);
    tree.annotate_with_base(base);
    EXPECT_TRUE(tree.differential());
    EXPECT_EQ(tree.find(chain(kDepth))->base_total, 2);
    FrameTree moved = std::move(tree);
    EXPECT_EQ(moved.depth(), kDepth);
  }  // every tree destroyed here
}

TEST(FlameRobust, EveryWriterHandlesADeepTree) {
  constexpr size_t kDepth = 20000;
  FrameTree tree("all", "samples");
  tree.add_stack(chain(kDepth), 5);
  tree.add_stack({"f0", "other"}, 5);
  const std::string folded = to_folded(tree);
  EXPECT_EQ(folded.size(), 3 * kDepth + 2 + 11);  // "f0;f1;...;f9 5\n" and "f0;other 5\n"
  EXPECT_EQ(parse_folded(folded, "round trip").depth(), kDepth);
  const nlohmann::json speedscope = to_speedscope(tree, "deep");
  EXPECT_EQ(speedscope["profiles"][0]["samples"][0].size(), kDepth);
  SvgOptions options;
  options.min_frame_px = 0;  // draw every frame
  const std::string svg = flame_svg(tree, options);
  size_t frames = 0;
  for (size_t at = svg.find("<g class=\"f\""); at != std::string::npos;
       at = svg.find("<g class=\"f\"", at + 1)) {
    ++frames;
  }
  EXPECT_EQ(frames, kDepth + 2);  // the chain, "other" and the root
  EXPECT_LT(svg.size(), (kDepth + 2) * 600);
}

TEST(FlameRobust, AFoldedStackOfEightThousandFramesIsRead) {
  std::string line;
  for (int i = 0; i < 8000; ++i) {
    if (i) line += ';';
    line += "frame";
    line += std::to_string(i);
  }
  const FrameTree tree = parse_folded(line + " 7\n", "deep.folded");
  EXPECT_EQ(tree.depth(), 8000u);
  EXPECT_EQ(to_folded(tree), line + " 7\n");
}

TEST(FlameRobust, ADeepNodeNameMakesFramesLinearInItsLength) {
  // "a.a.a...." 20000 blocks deep: one frame per block, each a prefix of the name, would be
  // 20000 frames of 20000 characters on average.
  std::string node;
  for (int i = 0; i < 20000; ++i) node += "a.";
  node += "conv";
  OpRecord record;
  record.node = node;
  record.op = "conv2d";
  record.kernel = "conv2d.im2col";
  record.ns_per_iteration = 10;
  const std::vector<std::string> frames = op_frames(record);
  ASSERT_EQ(frames.size(), kMaxBlockFrames + 2);
  size_t bytes = 0;
  for (const std::string& f : frames) bytes += f.size();
  EXPECT_LT(bytes, 4 * node.size());
  EXPECT_EQ(frames[kMaxBlockFrames], "conv2d " + node);  // the whole name stays in the op frame
  RungOps rung;
  rung.name = "toy/b1";
  rung.records = {record};
  const FrameTree tree = tree_from_ops({rung});
  EXPECT_EQ(tree.depth(), kMaxBlockFrames + 3);
  EXPECT_LT(flame_svg(tree, {}).size(), 20 * node.size());
  EXPECT_LT(to_folded(tree).size(), 4 * node.size());
}

}  // namespace
}  // namespace cuvil::reports::flame
