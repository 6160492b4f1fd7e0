// Per-op records of a run.json: parsing, rung selection, the frame hierarchy, and bad input.
#include <gtest/gtest.h>

#include "base/error.h"
#include "reports/flame/op_records.h"
#include "tests/base/user_error_of.h"
#include "tests/reports/flame_fixture.h"

namespace cuvil::reports::flame {
namespace {

using testing::FixtureRung;
using testing::resnet_like;
using testing::run_with_ops;

TEST(FlameOps, ReadsEveryRecordInStepOrder) {
  const auto rungs = read_op_records(run_with_ops({resnet_like()}), "r.json");
  ASSERT_EQ(rungs.size(), 1u);
  EXPECT_EQ(rungs[0].name, "resnet50/b1");
  EXPECT_EQ(rungs[0].suite, "resnet50");
  EXPECT_EQ(rungs[0].rung, "b1");
  EXPECT_DOUBLE_EQ(rungs[0].iterations, 17);
  ASSERT_EQ(rungs[0].records.size(), 7u);
  EXPECT_EQ(rungs[0].records[1].node, "layer1.0.conv1");
  EXPECT_EQ(rungs[0].records[1].kernel, "conv2d.1x1_gemm");
  EXPECT_EQ(rungs[0].records[6].step, 6);
  EXPECT_DOUBLE_EQ(rungs[0].records[2].ns_per_iteration, 7300);
  EXPECT_DOUBLE_EQ(rungs[0].records[2].flops, 3000);
}

TEST(FlameOps, NodeNamesSplitIntoBlocksThenOpThenKernel) {
  OpRecord r;
  r.node = "layer1.0.conv1";
  r.op = "conv2d";
  r.kernel = "conv2d.im2col";
  EXPECT_EQ(op_frames(r), (std::vector<std::string>{"layer1", "layer1.0", "conv2d layer1.0.conv1",
                                                    "conv2d.im2col"}));
  r.node = "fc";
  r.op = "linear";
  r.kernel = "gemm.packed";
  EXPECT_EQ(op_frames(r), (std::vector<std::string>{"linear fc", "gemm.packed"}));
}

TEST(FlameOps, TreeWeighsFramesByNanosecondsPerIteration) {
  const FrameTree tree = tree_from_ops(read_op_records(run_with_ops({resnet_like()}), "r.json"));
  EXPECT_EQ(tree.unit(), "nanoseconds");
  EXPECT_DOUBLE_EQ(tree.total(), 1700 + 3100 + 7300 + 1100 + 170 + 30 + 1300);
  EXPECT_DOUBLE_EQ(tree.find({"resnet50/b1", "layer1"})->total, 3100 + 7300 + 1100 + 170);
  EXPECT_DOUBLE_EQ(tree.find({"resnet50/b1", "layer1", "layer1.1"})->total, 1100 + 170);
  const FrameNode* kernel =
      tree.find({"resnet50/b1", "layer1", "layer1.0", "conv2d layer1.0.conv2", "conv2d.im2col"});
  ASSERT_NE(kernel, nullptr);
  EXPECT_DOUBLE_EQ(kernel->self, 7300);
  EXPECT_EQ(tree.depth(), 5u);
}

TEST(FlameOps, EachRungIsAFrameOnTheRoot) {
  const auto doc = run_with_ops({resnet_like("resnet50/b1"), resnet_like("resnet50/b8", 3)});
  const FrameTree tree = tree_from_ops(read_op_records(doc, "r.json"));
  ASSERT_EQ(tree.root().children.size(), 2u);
  EXPECT_EQ(tree.root().children[1]->name, "resnet50/b8");
  EXPECT_DOUBLE_EQ(tree.root().children[1]->total, 3 * tree.root().children[0]->total);
}

TEST(FlameOps, RungIsChosenByRungNameOrFullName) {
  const auto doc = run_with_ops({resnet_like("resnet50/b1"), resnet_like("resnet50/b8", 3)});
  EXPECT_EQ(read_op_records(doc, "r.json", "b8").at(0).name, "resnet50/b8");
  EXPECT_EQ(read_op_records(doc, "r.json", "resnet50/b1").size(), 1u);
}

TEST(FlameOps, UnknownRungIsAUserErrorListingTheKnownOnes) {
  const auto doc = run_with_ops({resnet_like("resnet50/b1")});
  const std::string message = user_error_of([&] { read_op_records(doc, "r.json", "b3"); });
  EXPECT_NE(message.find("r.json"), std::string::npos) << message;
  EXPECT_NE(message.find("'b3'"), std::string::npos) << message;
  EXPECT_NE(message.find("resnet50/b1"), std::string::npos) << message;
}

TEST(FlameOps, RunWithoutPerOpRecordsTellsTheUserToProbeOps) {
  nlohmann::json doc = run_with_ops({resnet_like()});
  doc["benchmarks"][1]["cuvil"].erase("ops");
  const std::string message = user_error_of([&] { read_op_records(doc, "plain.json"); });
  EXPECT_NE(message.find("plain.json"), std::string::npos) << message;
  EXPECT_NE(message.find("cuvil.ops"), std::string::npos) << message;
  EXPECT_NE(message.find("--probes ops"), std::string::npos) << message;
  EXPECT_FALSE(has_op_records(doc, "plain.json"));
}

TEST(FlameOps, DocumentWithoutBenchmarksIsAUserError) {
  const std::string message = user_error_of([&] {
    read_op_records(nlohmann::json{{"x", 1}}, "other.json");
  });
  EXPECT_NE(message.find("other.json"), std::string::npos) << message;
  EXPECT_NE(message.find("benchmarks"), std::string::npos) << message;
}

TEST(FlameOps, RecordWithoutTimeNamesTheField) {
  nlohmann::json doc = run_with_ops({resnet_like()});
  doc["benchmarks"][1]["cuvil"]["ops"]["records"][3].erase("ns_per_iteration");
  const std::string message = user_error_of([&] { read_op_records(doc, "r.json"); });
  EXPECT_NE(message.find("/records/3"), std::string::npos) << message;
  EXPECT_NE(message.find("ns_per_iteration"), std::string::npos) << message;
}

TEST(FlameOps, NegativeTimeIsAUserError) {
  nlohmann::json doc = run_with_ops({resnet_like()});
  doc["benchmarks"][1]["cuvil"]["ops"]["records"][0]["ns_per_iteration"] = -1.0;
  EXPECT_THROW(read_op_records(doc, "r.json"), UserError);
}

TEST(FlameOps, RecordsThatAreNotAnArrayAreAUserError) {
  nlohmann::json doc = run_with_ops({resnet_like()});
  doc["benchmarks"][1]["cuvil"]["ops"]["records"] = "none";
  const std::string message = user_error_of([&] { read_op_records(doc, "r.json"); });
  EXPECT_NE(message.find("records"), std::string::npos) << message;
}

TEST(FlameOps, SamplesFileIsReadFromTheMedianEntry) {
  nlohmann::json doc = run_with_ops({resnet_like()});
  EXPECT_FALSE(samples_file_of(doc, "r.json"));
  doc["benchmarks"][1]["cuvil"]["samples_file"] = "run.folded";
  EXPECT_EQ(samples_file_of(doc, "r.json")->named, "run.folded");
  EXPECT_EQ(samples_file_of(doc, "r.json")->where, "r.json: /benchmarks/1/cuvil/samples_file");
  EXPECT_EQ(samples_file_of(doc, "r.json", "b1")->named, "run.folded");
  EXPECT_FALSE(samples_file_of(doc, "r.json", "b8"));
}

TEST(FlameOps, SeparatorsInNamesCannotBreakFoldedStacks) {
  FixtureRung rung{"toy/r1", {{"a;b.c", "add", "add;x", 5}}};
  const FrameTree tree = tree_from_ops(read_op_records(run_with_ops({rung}), "r.json"));
  EXPECT_NE(tree.find({"toy/r1", "a:b", "add a:b.c", "add:x"}), nullptr);
}

}  // namespace
}  // namespace cuvil::reports::flame
