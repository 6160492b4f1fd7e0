// CUDA Graph capture boundaries and the fallback decisions.
#include "runtime/cuda/capture_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/pipeline.h"
#include "runtime/cuda/attrs.h"
#include "tests/cuda/cuda_test_util.h"

namespace cuvil::runtime::cuda {
namespace {

using ::testing::HasSubstr;

CaptureSettings settings(CaptureMode mode, int64_t steps = 64) {
  return {mode, steps};
}

TEST(CudaCapture, WholeIsOneGraph) {
  const auto s = plan_capture(7, settings(CaptureMode::whole), {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].begin, 0u);
  EXPECT_EQ(s[0].end, 7u);
  EXPECT_TRUE(s[0].captured);
}

TEST(CudaCapture, SegmentsCoverEveryStepInOrder) {
  const auto s = plan_capture(7, settings(CaptureMode::segments, 3), {});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].end, 3u);
  EXPECT_EQ(s[1].begin, 3u);
  EXPECT_EQ(s[2].begin, 6u);
  EXPECT_EQ(s[2].end, 7u);
  for (const auto& seg : s) EXPECT_TRUE(seg.captured);
}

TEST(CudaCapture, OffRunsEverythingOnTheStream) {
  const auto s = plan_capture(17, settings(CaptureMode::off), {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0].captured);
  EXPECT_THAT(s[0].reason, HasSubstr("capture off"));
}

TEST(CudaCapture, ABlockedStepRunsAloneAndSplitsTheGraph) {
  std::vector<std::string> blockers(7);
  blockers[3] = "synchronises with the host";
  const auto s = plan_capture(7, settings(CaptureMode::whole), blockers);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(s[0].captured);
  EXPECT_EQ(s[0].end, 3u);
  EXPECT_FALSE(s[1].captured);
  EXPECT_EQ(s[1].begin, 3u);
  EXPECT_EQ(s[1].end, 4u);
  EXPECT_EQ(s[1].reason, "synchronises with the host");
  EXPECT_TRUE(s[2].captured);
  EXPECT_EQ(s[2].begin, 4u);
}

TEST(CudaCapture, BlockersAtTheEndsLeaveNoEmptySegments) {
  std::vector<std::string> blockers(3);
  blockers[0] = "a";
  blockers[2] = "b";
  const auto s = plan_capture(3, settings(CaptureMode::segments, 1), blockers);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_FALSE(s[0].captured);
  EXPECT_TRUE(s[1].captured);
  EXPECT_FALSE(s[2].captured);
}

TEST(CudaCapture, SingleStepPlan) {
  const auto s = plan_capture(1, settings(CaptureMode::segments, 64), {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].end, 1u);
}

TEST(CudaCapture, EmptyPlanHasNoSegments) {
  EXPECT_TRUE(plan_capture(0, settings(CaptureMode::whole), {}).empty());
}

TEST(CudaCapture, SettingsComeFromTheCudaGraphPass) {
  passes::PipelineConfig c =
      testing::cuda_config_with("cuda-graph", "capture", std::string("segments"));
  testing::find_invocation(c, "cuda-graph")->params["segment_steps"] = int64_t{5};
  const Plan plan = passes::compile(testing::tiny_suite_graph("resnet50"), c, 1).plan;
  const CaptureSettings s = capture_settings(plan);
  EXPECT_EQ(s.mode, CaptureMode::segments);
  EXPECT_EQ(s.segment_steps, 5);
  const auto segs = plan_capture(plan.steps.size(), s, {});
  EXPECT_EQ(segs.size(), (plan.steps.size() + 4) / 5);
  EXPECT_THAT(describe(segs, plan), HasSubstr(std::to_string(segs.size()) + " graph(s)"));
}

TEST(CudaCapture, TheModeIsSetOncePerPlanNotOnEveryStep) {
  const Plan plan =
      passes::compile(testing::tiny_suite_graph("resnet50"), passes::default_pipeline("cuda"), 1)
          .plan;
  EXPECT_EQ(plan.settings.get_string(attrs::kCapture, ""), "whole");
  for (const Step& step : plan.steps) EXPECT_FALSE(step.attrs.has(attrs::kCapture)) << step.kernel;
}

TEST(CudaCapture, WithoutTheCudaGraphPassNothingIsCaptured) {
  passes::PipelineConfig c = passes::default_pipeline("cuda");
  c.passes.pop_back();  // cuda-graph is last
  const Plan plan = passes::compile(testing::linear_graph(3, 5, 7), c, 1).plan;
  EXPECT_EQ(capture_settings(plan).mode, CaptureMode::off);
}

TEST(CudaCapture, UnknownModeIsUserError) {
  Plan plan;
  plan.steps.emplace_back();
  plan.settings.set(attrs::kCapture, std::string("always"));
  EXPECT_THROW(capture_settings(plan), UserError);
}

TEST(CudaCapture, SegmentSizeBelowOneIsUserError) {
  Plan plan;
  plan.steps.emplace_back();
  plan.settings.set(attrs::kCapture, std::string("segments"));
  plan.settings.set(attrs::kSegmentSteps, int64_t{0});
  EXPECT_THROW(capture_settings(plan), UserError);
}

}  // namespace
}  // namespace cuvil::runtime::cuda
