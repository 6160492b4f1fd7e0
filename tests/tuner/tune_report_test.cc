// cuvil-tune-gen's pictures: importance with SHAP intervals and fANOVA beside, the history with
// failed and pruned trials marked, the sensitivity sweep, and the study report linking them.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/reports/run_json_fixture.h"
#include "tuner/tune_report.h"

namespace cuvil::tuner {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

TrialRecord trial(int number, const std::string& state, double value, bool has_value = true) {
  TrialRecord t;
  t.number = number;
  t.state = state;
  t.value = value;
  t.has_value = has_value;
  return t;
}

struct Fixture {
  std::vector<TrialRecord> trials = {trial(0, "complete", 10), trial(1, "complete", 8),
                                     trial(2, "fail", 0, false), trial(3, "pruned", 12),
                                     trial(4, "complete", 9)};
  ImportanceReport importance;
  std::vector<SensitivityRow> rows;
  TuneReport report;
  Fixture() {
    trials[0].baseline = true;
    importance.trials = 3;
    importance.refits = 5;
    ParamImportance a;
    a.name = "gemm-tiling.tile_m";
    a.mean_abs_shap = 0.3;
    a.share = 0.75;
    a.low = 0.2;
    a.high = 0.35;
    ParamImportance b = a;
    b.name = "layout.memory_layout";
    b.mean_abs_shap = 0.1;
    b.share = 0.25;
    importance.ranking = {a, b};
    SensitivityRow up;
    up.neighbour.param = "gemm-tiling.tile_m";
    up.neighbour.move = "up";
    up.neighbour.from = 32;
    up.neighbour.to = 64;
    up.ratio = {1.2, 1.1, 1.3, 0.01};
    SensitivityRow bad = up;
    bad.neighbour.move = "down";
    bad.neighbour.to = 16;
    bad.failure = "wrong result";
    rows = {up, bad};
    report.output = "tuned.cuvilpass";
    report.suite = "resnet50";
    report.study = "cuvil-resnet50";
    report.rungs = "b1";
    report.objective = "geometric mean of median latency (ms) over the rungs";
    report.trials = &trials;
    report.best_trial = 1;
    report.baseline_trial = 0;
    report.importance = &importance;
    report.fanova = {{"gemm-tiling.tile_m", 0.6}, {"layout.memory_layout", 0.4}};
    report.sensitivity = &rows;
    report.written = "full best";
  }
};

TEST(TuneReport, ImportanceBarsHaveShapIntervalsAndFanovaBeside) {
  Fixture f;
  const std::string svg = importance_svg(f.report);
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 4u);
  EXPECT_EQ(count(svg, "class=\"interval\""), 2u);
  EXPECT_NE(svg.find(">share of importance (%)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">fANOVA share</text>"), std::string::npos);
  f.report.fanova = nullptr;
  f.report.fanova_note = "not computed (--no-fanova)";
  const std::string without = importance_svg(f.report);
  EXPECT_EQ(count(without, "<rect class=\"bar\""), 2u);
  EXPECT_NE(without.find("not computed (--no-fanova)"), std::string::npos);
}

TEST(TuneReport, HistoryMarksEveryTrialAndTheBestSoFar) {
  Fixture f;
  const std::string svg = history_svg(f.report);
  EXPECT_EQ(count(svg, "class=\"point trial"), 5u);
  EXPECT_EQ(count(svg, "class=\"point trial failed\""), 1u);
  EXPECT_EQ(count(svg, "class=\"point trial pruned\""), 1u);
  EXPECT_EQ(count(svg, "class=\"point trial complete baseline\""), 1u);
  EXPECT_NE(svg.find("class=\"best-so-far\""), std::string::npos);
  EXPECT_NE(svg.find(">trial number</text>"), std::string::npos);
  EXPECT_NE(svg.find(">objective (ms)</text>"), std::string::npos);
}

TEST(TuneReport, SensitivityBarsAroundOneWithFailuresSaid) {
  Fixture f;
  const std::string svg = sensitivity_svg(f.report);
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 1u);
  EXPECT_NE(svg.find("failed: wrong result"), std::string::npos);
  EXPECT_NE(svg.find("class=\"ref\""), std::string::npos);
  EXPECT_NE(svg.find("gemm-tiling.tile_m: 32 -&gt; 64"), std::string::npos);
}

TEST(TuneReport, WritesThePicturesBesideTheConfigAndAReportLinkingThem) {
  Fixture f;
  reports::testing::ScratchDir scratch;
  f.report.output = scratch.file("tuned.cuvilpass");
  const std::vector<std::string> written = write_tune_report(f.report);
  ASSERT_EQ(written.size(), 4u);
  for (const char* name : {"tuned.importance.svg", "tuned.history.svg", "tuned.sensitivity.svg",
                           "tuned.report.html"}) {
    EXPECT_TRUE(std::filesystem::exists(scratch.file(name))) << name;
  }
  const std::string html = study_report_html(f.report);
  for (const char* link : {"href=\"tuned.importance.svg\"", "href=\"tuned.history.svg\"",
                           "href=\"tuned.sensitivity.svg\"", "href=\"tuned.cuvilpass\""}) {
    EXPECT_NE(html.find(link), std::string::npos) << link;
  }
  f.report.sensitivity = nullptr;
  EXPECT_EQ(write_tune_report(f.report).size(), 3u);
}

}  // namespace
}  // namespace cuvil::tuner
