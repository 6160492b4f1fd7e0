// The dashboard from a synthetic results database: one chart point per stored run, the latest
// verdict table, change points on the front page, machines kept apart, flame-graph links.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/error.h"
#include "reports/dashboard/flame_links.h"
#include "reports/dashboard/format.h"
#include "reports/dashboard/history.h"
#include "reports/dashboard/site.h"
#include "reports/dashboard/svg_chart.h"
#include "reports/results_store.h"
#include "stats/order_statistics.h"
#include "tests/reports/run_json_fixture.h"

namespace cuvil::reports::dashboard {
namespace {

using reports::testing::FixtureBenchmark;
using reports::testing::ScratchDir;

// Seven samples around `median_ns` (+-1%, symmetric), so the stored median is `median_ns`.
std::vector<double> samples_around(double median_ns) {
  std::vector<double> out;
  for (int i = -3; i <= 3; ++i) out.push_back(median_ns * (1 + 0.003 * i));
  return out;
}

// A pipeline config as the run.json context records it.
struct Config {
  std::string hash, yaml;
};

// Stores one run of benchmarks resnet50/r0 and resnet50/r1 with the given medians (its commit
// "c<day>" unless given; the fixture's config cafef00d, without text, unless given).
int64_t store(ResultsStore& s, int day, double r0_ns, double r1_ns,
              const std::string& host = "testhost", const Config& config = {},
              const std::string& commit = "") {
  nlohmann::json doc =
      reports::testing::run_document({FixtureBenchmark{"resnet50/r0", samples_around(r0_ns)},
                                      FixtureBenchmark{"resnet50/r1", samples_around(r1_ns)}},
                                     commit.empty() ? "c" + std::to_string(day) : commit);
  if (!config.hash.empty()) {
    doc["context"]["cuvil"]["config_hash"] = config.hash;
    doc["context"]["cuvil"]["config_yaml"] = config.yaml;
  }
  char date[40];
  std::snprintf(date, sizeof date, "2024-05-%02dT03:00:00+0000", day);
  doc["context"]["date"] = date;
  doc["context"]["host_name"] = host;
  doc["context"]["cuvil"]["machine_peak"] = {{"fp32_gflops", 50.0}, {"mem_read_gbps", 10.0}};
  return s.store_run(doc);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The <svg> element with this id.
std::string chart(const std::string& html, const std::string& id) {
  const size_t begin =
      html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"" + id + "\"");
  if (begin == std::string::npos) return {};
  return html.substr(begin, html.find("</svg>", begin) - begin);
}

// The row of table `table_class` that links to benchmark `name`.
std::string table_row(const std::string& html, const std::string& table_class,
                      const std::string& name) {
  const size_t table = html.find("<table class=\"" + table_class + "\"");
  if (table == std::string::npos) return {};
  const size_t end = html.find("</table>", table);
  const size_t link = html.find("\">" + name + "</a>", table);
  if (link == std::string::npos || link > end) return {};
  const size_t row = html.rfind("<tr", link);
  return html.substr(row, html.find("</tr>", link) - row);
}

class Dashboard : public ::testing::Test {
 protected:
  DashboardSummary write(const std::string& flame_dir = "") {
    DashboardOptions o;
    o.out_dir = scratch.file("site");
    o.flame_dir = flame_dir;
    ResultsStore s(db_path());
    summary = write_dashboard(s, o);
    html = read_text(scratch.file("site/index.html"));
    return summary;
  }
  std::string db_path() const { return scratch.file("results.db"); }
  std::string chart_of(const std::string& name) {
    ResultsStore s(db_path());
    for (const BenchmarkHistory& h : load_histories(s)) {
      if (h.name == name) return chart(html, "chart-" + h.key());
    }
    return {};
  }

  ScratchDir scratch;
  DashboardSummary summary;
  std::string html;
};

TEST_F(Dashboard, EachChartHasOnePointPerStoredRun) {
  {
    ResultsStore s(db_path());
    for (int day = 1; day <= 5; ++day) store(s, day, 1e6, 2e6);
  }
  write();
  EXPECT_EQ(summary.series, 2u);
  EXPECT_EQ(summary.runs, 5u);
  EXPECT_EQ(summary.points, 10u);
  for (const char* name : {"resnet50/r0", "resnet50/r1"}) {
    const std::string svg = chart_of(name);
    ASSERT_FALSE(svg.empty()) << name;
    EXPECT_EQ(count(svg, "<circle class=\"point"), 5u) << name;
    EXPECT_EQ(count(svg, "class=\"spread\""), 1u) << name;
    EXPECT_NE(svg.find("2024-05-05"), std::string::npos) << "dates under the axis";
    EXPECT_NE(svg.find(">c5<"), std::string::npos) << "commits under the axis";
  }
}

TEST_F(Dashboard, OneRunIsOnePointAndNoBaseline) {
  {
    ResultsStore s(db_path());
    store(s, 1, 1e6, 2e6);
  }
  write();
  EXPECT_EQ(count(chart_of("resnet50/r0"), "<circle class=\"point"), 1u);
  EXPECT_NE(table_row(html, "verdicts", "resnet50/r0").find("first run"), std::string::npos);
}

TEST_F(Dashboard, TheVerdictPoolsTheLastKRunsBeforeTheLatest) {
  static_assert(kBaselineRuns == 5, "the runs below are the five before the latest");
  const double r0[] = {3e6, 1e6, 1.01e6, 0.99e6, 1.0e6, 1.02e6, 1.2e6};
  {
    ResultsStore s(db_path());
    for (int day = 1; day <= 7; ++day) store(s, day, r0[day - 1], 2e6);  // run 1 is too old
  }
  write();
  const std::string slower = table_row(html, "verdicts", "resnet50/r0");
  EXPECT_NE(html.find("<th>baseline: last 5 runs</th>"), std::string::npos);
  EXPECT_NE(slower.find("<td>runs 2, 3, 4, 5, 6 <code>c2..c6</code></td>"), std::string::npos)
      << slower;
  EXPECT_NE(slower.find("<td>run 7 <code>c7</code></td>"), std::string::npos) << slower;
  std::vector<double> pooled;
  for (int day = 2; day <= 6; ++day) {
    const std::vector<double> run = samples_around(r0[day - 1]);
    pooled.insert(pooled.end(), run.begin(), run.end());
  }
  const double pooled_median = stats::median_of(pooled);
  EXPECT_NE(slower.find("<td>" + format_time(pooled_median) + "</td>"), std::string::npos)
      << format_time(pooled_median) << " in " << slower;
  EXPECT_NE(slower.find("<td>" + format_time(0.99e6) + " .. " + format_time(1.02e6) + "</td>"),
            std::string::npos)
      << slower;
  EXPECT_NE(slower.find(format_fixed((1.2e6 / pooled_median - 1) * 100, 2, true) + "%"),
            std::string::npos)
      << slower;
  EXPECT_NE(slower.find("verdict-slower"), std::string::npos) << slower;
  const std::string same = table_row(html, "verdicts", "resnet50/r1");
  EXPECT_NE(same.find("verdict-same"), std::string::npos) << same;
}

TEST_F(Dashboard, FewerThanKEarlierRunsIsNotEnoughData) {
  {
    ResultsStore s(db_path());
    for (int day = 1; day <= 5; ++day) store(s, day, day < 5 ? 1e6 : 2e6, 2e6);
  }
  write();
  const std::string row = table_row(html, "verdicts", "resnet50/r0");
  EXPECT_NE(row.find("not enough data"), std::string::npos) << row;
  EXPECT_NE(row.find("4 of 5 earlier runs with config cafef00d"), std::string::npos) << row;
  EXPECT_EQ(row.find("verdict-slower"), std::string::npos) << row;
}

TEST_F(Dashboard, RunsOfAnotherConfigAreNotInTheBaseline) {
  const Config a{"aaaa", ""}, b{"bbbb", ""};
  {
    ResultsStore s(db_path());
    for (int day = 1; day <= 8; ++day) store(s, day, 1e6, 2e6, "testhost", day <= 4 ? a : b);
  }
  write();
  // Runs 5..7 share run 8's config: three of five.
  const std::string row = table_row(html, "verdicts", "resnet50/r0");
  EXPECT_NE(row.find("<td>runs 5, 6, 7 <code>c5..c7</code></td>"), std::string::npos) << row;
  EXPECT_NE(row.find("3 of 5 earlier runs with config bbbb"), std::string::npos) << row;
}

// A baseline from a made-up history: medians per point, each run's samples around its median.
Baseline baseline_for(const std::vector<double>& medians) {
  BenchmarkHistory h;
  h.name = "resnet50/r0";
  for (double m : medians) {
    HistoryPoint p;
    p.median_ns = m;
    p.config_hash = "cafef00d";
    h.points.push_back(p);
  }
  return baseline_of(h, kBaselineRuns, CompareOptions{},
                     [&](size_t i) { return samples_around(medians.at(i)); });
}

TEST(Baseline, ALatestMedianInsideTheLastRunsRangeStaysSame) {
  // The latest run differs significantly from the pooled samples, but not from what the last
  // five runs did among themselves.
  const Baseline inside = baseline_for({1e6, 1.1e6, 0.95e6, 1.05e6, 1e6, 1.08e6});
  ASSERT_TRUE(inside.enough);
  EXPECT_EQ(inside.points.size(), kBaselineRuns);
  EXPECT_EQ(inside.comparison.verdict, Verdict::kSlower);
  EXPECT_TRUE(inside.within_range);
  EXPECT_EQ(inside.verdict, Verdict::kSame);
  const Baseline above = baseline_for({1e6, 1.1e6, 0.95e6, 1.05e6, 1e6, 1.15e6});
  EXPECT_FALSE(above.within_range);
  EXPECT_EQ(above.verdict, Verdict::kSlower);
}

TEST(Baseline, NeedsKEarlierRunsOfTheLatestConfig) {
  EXPECT_FALSE(baseline_for({1e6}).enough);
  EXPECT_FALSE(baseline_for({1e6, 1e6, 1e6, 1e6, 1e6}).enough);
  EXPECT_TRUE(baseline_for({1e6, 1e6, 1e6, 1e6, 1e6, 1e6}).enough);
  EXPECT_EQ(baseline_for({1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6}).points,
            (std::vector<size_t>{2, 3, 4, 5, 6}));
}

TEST_F(Dashboard, ThroughputAndPercentOfPeakAreShown) {
  {
    ResultsStore s(db_path());
    store(s, 1, 1e6, 2e6);
  }
  write();
  // The fixture's median entry says 12.5 GFLOP/s; the run's peak is 50 GFLOP/s.
  const std::string row = table_row(html, "verdicts", "resnet50/r0");
  EXPECT_NE(row.find("<td>12.5</td><td>25.0%</td>"), std::string::npos) << row;
}

TEST_F(Dashboard, AStepIsListedOnTheFrontPageWithItsCommitRangeAndMarked) {
  {
    ResultsStore s(db_path());
    for (int day = 1; day <= 16; ++day) store(s, day, day <= 8 ? 1e6 : 1.2e6, 2e6);
  }
  write();
  EXPECT_EQ(summary.change_points, 1u);
  EXPECT_EQ(summary.regressions, 1u);
  const std::string row = table_row(html, "change-points", "resnet50/r0");
  ASSERT_FALSE(row.empty()) << html.substr(0, 3000);
  EXPECT_NE(row.find("c8..c9"), std::string::npos) << row;
  EXPECT_NE(row.find("+20.0%"), std::string::npos) << row;
  EXPECT_NE(row.find("regression"), std::string::npos) << row;
  EXPECT_NE(row.find("2024-05-08 .. 2024-05-09"), std::string::npos) << row;
  EXPECT_TRUE(table_row(html, "change-points", "resnet50/r1").empty());
  const std::string svg = chart_of("resnet50/r0");
  EXPECT_EQ(count(svg, "class=\"change regression\""), 1u);
  EXPECT_EQ(count(chart_of("resnet50/r1"), "class=\"change "), 0u);
}

TEST_F(Dashboard, FlatHistoriesHaveNoChangePoints) {
  {
    ResultsStore s(db_path());
    for (int day = 1; day <= 14; ++day) store(s, day, 1e6 * (1 + 0.01 * (day % 3)), 2e6);
  }
  write();
  EXPECT_EQ(summary.change_points, 0u);
  EXPECT_NE(html.find("No change points in 2 histories."), std::string::npos);
  EXPECT_EQ(html.find("too short"), std::string::npos);
}

TEST_F(Dashboard, HistoriesTooShortForChangePointsSaySo) {
  // A 47% step halfway through 8 and through 10 runs: the detector cannot see it yet, and the
  // page must not let that silence pass for "no change".
  const size_t need = change_point_min_runs();
  for (int runs : {8, 10}) {
    std::filesystem::remove(db_path());
    {
      ResultsStore s(db_path());
      for (int day = 1; day <= runs; ++day) store(s, day, day <= runs / 2 ? 1e6 : 1.47e6, 2e6);
    }
    write();
    EXPECT_EQ(summary.change_points, 0u) << runs;
    EXPECT_EQ(summary.too_short, 2u) << runs;
    const std::string notice = "history too short for change points (need " + std::to_string(need) +
                               ", has " + std::to_string(runs) + " runs)";
    EXPECT_EQ(count(html, notice), 2u) << notice << "\n" << html.substr(0, 4000);
    EXPECT_NE(html.find("2 of 2 histories too short for change points (need " +
                        std::to_string(need) + " runs"),
              std::string::npos)
        << runs;
    EXPECT_EQ(html.find("No change points in 2 histories"), std::string::npos) << runs;
    EXPECT_NE(html.find("No history is long enough for change points yet."), std::string::npos);
  }
}

TEST_F(Dashboard, AHistoryOfTheMinimumLengthHasNoTooShortNotice) {
  const size_t need = change_point_min_runs();
  {
    ResultsStore s(db_path());
    for (size_t day = 1; day <= need; ++day) {
      store(s, static_cast<int>(day), day <= need / 2 ? 1e6 : 1.47e6, 2e6);
    }
  }
  write();
  EXPECT_EQ(summary.too_short, 0u);
  EXPECT_EQ(html.find("too short"), std::string::npos);
  EXPECT_EQ(summary.change_points, 1u);
}

// A benchmark whose plan had bf16 or int8 products is not held to the fp32 peak: it shows the
// %peak cuvil-bench stored for it (each part against its own peak), or none (a dash) where that
// was 0 or absent; an fp32 one in the same run keeps its share of the fp32 peak.
TEST_F(Dashboard, ReducedPrecisionRunsShowTheirStoredPeakShareNotTheFp32One) {
  {
    ResultsStore s(db_path());
    nlohmann::json doc =
        reports::testing::run_document({FixtureBenchmark{"resnet50/r0", samples_around(1e6)},
                                        FixtureBenchmark{"resnet50/r1", samples_around(1e6)},
                                        FixtureBenchmark{"resnet50/r2", samples_around(1e6)}});
    doc["context"]["cuvil"]["machine_peak"] = {{"fp32_gflops", 50.0}, {"mem_read_gbps", 10.0}};
    for (auto& e : doc["benchmarks"]) {
      const std::string name = e.value("run_name", "");
      if (name != "resnet50/r0" && e.value("aggregate_name", "") == "median") {
        e["cuvil"]["reduced_precision_flops"] = 1e9;
        if (name == "resnet50/r2") e["pct_peak_flops"] = 62.5;
      }
    }
    s.store_run(doc);
  }
  ResultsStore s(db_path());
  const auto histories = load_histories(s);
  ASSERT_EQ(histories.size(), 3u);
  const std::map<std::string, double> want = {
      {"resnet50/r0", 25.0}, {"resnet50/r1", 0.0}, {"resnet50/r2", 62.5}};
  for (const BenchmarkHistory& h : histories) {
    ASSERT_EQ(h.points.size(), 1u);
    EXPECT_EQ(h.points[0].pct_peak_flops, want.at(h.name)) << h.name;
  }
}

TEST_F(Dashboard, MachinesHaveTheirOwnHistories) {
  {
    ResultsStore s(db_path());
    store(s, 1, 1e6, 2e6, "alpha");
    store(s, 2, 1e6, 2e6, "beta");
    store(s, 3, 1e6, 2e6, "alpha");
  }
  ResultsStore s(db_path());
  const auto histories = load_histories(s);
  ASSERT_EQ(histories.size(), 4u);
  EXPECT_EQ(histories[0].name, "resnet50/r0");
  EXPECT_EQ(histories[0].host, "alpha");
  EXPECT_EQ(histories[0].points.size(), 2u);
  EXPECT_NE(histories[0].key(), histories[2].key());
  write();
  EXPECT_NE(html.find("id=\"" + histories[2].key() + "\""), std::string::npos);
}

TEST_F(Dashboard, SpreadIsTheP10ToP90OfTheRunsSamples) {
  {
    ResultsStore s(db_path());
    store(s, 1, 1e6, 2e6);
  }
  ResultsStore s(db_path());
  const auto histories = load_histories(s);  // held: a reference into a temporary would dangle
  const HistoryPoint& p = histories.at(0).points.at(0);
  EXPECT_DOUBLE_EQ(p.median_ns, 1e6);
  EXPECT_DOUBLE_EQ(p.low_ns, 1e6 * (1 - 0.009));  // the smallest of 7 is the nearest-rank p10
  EXPECT_DOUBLE_EQ(p.high_ns, 1e6 * (1 + 0.009));
  EXPECT_EQ(p.samples, 7);
  EXPECT_EQ(p.commit, "c1");
}

TEST_F(Dashboard, FlameGraphsAreCopiedIntoTheSiteAndLinked) {
  {
    ResultsStore s(db_path());
    store(s, 1, 1e6, 2e6);
    store(s, 2, 1e6, 2e6);
  }
  const std::string flames = scratch.file("flames");
  std::filesystem::create_directories(flames);
  std::ofstream(flames + "/run-2.svg") << "<svg xmlns=\"http://www.w3.org/2000/svg\"/>";
  write(flames);
  EXPECT_EQ(summary.flame_graphs, 1u);
  EXPECT_TRUE(std::filesystem::exists(scratch.file("site/flame/run-2.svg")));
  EXPECT_FALSE(std::filesystem::exists(scratch.file("site/flame/run-1.svg")));
  EXPECT_NE(table_row(html, "verdicts", "resnet50/r0").find("href=\"flame/run-2.svg\""),
            std::string::npos);
  EXPECT_EQ(count(chart_of("resnet50/r0"), "<a href=\"flame/run-2.svg\">"), 1u);
}

TEST(FlameLinks, FindsTheSvgNextToTheRunJsonNamedOnTheCommandLine) {
  ScratchDir scratch;
  const std::string json = scratch.file("nightly-resnet50.json");
  std::ofstream(scratch.file("nightly-resnet50.svg")) << "<svg/>";
  HistoryPoint p;
  p.run_id = 7;
  p.command_line = "cuvil-bench run --suite resnet50 --out " + json + " --db x.db";
  EXPECT_EQ(find_flame_graph(p, ""), scratch.file("nightly-resnet50.svg"));
  p.command_line = "cuvil-bench run --suite resnet50 --db x.db";
  EXPECT_EQ(find_flame_graph(p, ""), "");
}

TEST(FlameLinks, ReadsTheOutOptionInEverySpelling) {
  EXPECT_EQ(out_path_of("cuvil-bench run --out a/b.json -q"), "a/b.json");
  EXPECT_EQ(out_path_of("cuvil-bench run --out=c.json"), "c.json");
  EXPECT_EQ(out_path_of("cuvil-bench run -o d.json --no-db"), "d.json");
  EXPECT_EQ(out_path_of("cuvil-bench run --suite x"), "");
}

TEST(FlameLinks, ARelativeOutIsTakenFromWhereTheRunWasMade) {
  ScratchDir scratch;
  std::filesystem::create_directories(scratch.file("made-here"));
  std::ofstream(scratch.file("made-here/night.svg")) << "<svg/>";
  HistoryPoint p;
  p.command_line = "cuvil-bench run --suite resnet50 --out night.json";
  p.working_directory = scratch.file("made-here");
  EXPECT_EQ(find_flame_graph(p, ""), scratch.file("made-here/night.svg"));
  p.working_directory = scratch.file("elsewhere");
  EXPECT_EQ(find_flame_graph(p, ""), "");
}

TEST(FlameLinks, TheBackLinkGoesInsideTheSvg) {
  const std::string svg = with_back_link("<svg><g/></svg>\n", "../index.html#a-b");
  EXPECT_NE(svg.find("<a class=\"back-to-dashboard\" href=\"../index.html#a-b\">"),
            std::string::npos);
  EXPECT_LT(svg.find("back-to-dashboard"), svg.find("</svg>"));
  EXPECT_EQ(with_back_link("not svg", "x"), "not svg");
}

TEST_F(Dashboard, TheWorkingDirectoryOfARunFindsItsFlameGraphAndThePageLinksBack) {
  std::filesystem::create_directories(scratch.file("nightly"));
  std::ofstream(scratch.file("nightly/run.svg"))
      << "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>";
  {
    ResultsStore s(db_path());
    nlohmann::json doc = reports::testing::run_document(
        {FixtureBenchmark{"resnet50/r0", samples_around(1e6)}}, "c1");
    doc["context"]["cuvil"]["working_directory"] = scratch.file("nightly");
    StoreRunOptions o;
    o.command_line = "cuvil-bench run --suite resnet50 -o run.json";
    s.store_run(doc, o);
  }
  write();
  EXPECT_EQ(summary.flame_graphs, 1u);
  const std::string copied = read_text(scratch.file("site/flame/run-1.svg"));
  EXPECT_NE(copied.find("href=\"../index.html#resnet50_r0-"), std::string::npos) << copied;
}

TEST_F(Dashboard, RunsOfOneDayAndCommitAreToldApartUnderTheAxis) {
  {
    ResultsStore s(db_path());
    for (int i = 0; i < 6; ++i) {
      nlohmann::json doc = reports::testing::run_document(
          {FixtureBenchmark{"resnet50/r0", samples_around(1e6)}}, "same");
      char date[40];
      std::snprintf(date, sizeof date, "2024-05-01T03:%02d:00+0000", 10 + i);
      doc["context"]["date"] = date;
      s.store_run(doc);
    }
  }
  write();
  const std::string svg = chart_of("resnet50/r0");
  EXPECT_EQ(count(svg, "class=\"x-label\""), 6u) << svg;
  EXPECT_NE(svg.find(">05-01 03:10<"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">05-01 03:15<"), std::string::npos) << svg;
}

TEST_F(Dashboard, AnEmptyDatabaseGivesAPageSayingSo) {
  { ResultsStore s(db_path()); }
  write();
  EXPECT_EQ(summary.series, 0u);
  EXPECT_NE(html.find("No runs stored yet"), std::string::npos);
}

TEST_F(Dashboard, AnOutputPathThatIsAFileIsAUserError) {
  ResultsStore s(db_path());
  std::ofstream(scratch.file("taken")) << "x";
  DashboardOptions o;
  o.out_dir = scratch.file("taken");
  EXPECT_THROW(write_dashboard(s, o), UserError);
}

const Config kTiled192{"1111aaaa2222bbbb",
                       "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fold-batchnorm\n"
                       "  - name: gemm-tiling\n    params: { mc: 192, kc: 768 }\n"};
const Config kTiled256{"3333cccc4444dddd",
                       "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fold-batchnorm\n"
                       "  - name: gemm-tiling\n    params: { mc: 256, kc: 768 }\n"};

TEST_F(Dashboard, EachPointShowsItsConfigHashAndWhatChanged) {
  {
    ResultsStore s(db_path());
    store(s, 1, 1e6, 2e6, "testhost", kTiled192);
    store(s, 2, 1e6, 2e6, "testhost", kTiled192);
    store(s, 3, 1e6, 2e6, "testhost", kTiled256);
  }
  write();
  const std::string svg = chart_of("resnet50/r0");
  EXPECT_EQ(count(svg, "config 1111aaaa2222bbbb"), 2u) << svg;
  EXPECT_EQ(count(svg, "config 3333cccc4444dddd"), 1u) << svg;
  const std::string change =
      "config changed (1111aaaa2222bbbb \u2192 3333cccc4444dddd): "
      "gemm-tiling.mc: 192 \u2192 256";
  EXPECT_NE(svg.find(change), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "<line class=\"config-change\""), 1u) << svg;
  // The runs table: a config column, the change on the run that brought it.
  EXPECT_NE(html.find("<th>config</th><th>machine</th>"), std::string::npos);
  EXPECT_NE(html.find("<code>3333cccc4444dddd</code> <span class=\"config-changed\">" + change),
            std::string::npos);
}

TEST_F(Dashboard, AStepThatCameWithAConfigChangeSaysSo) {
  // One commit throughout: only the config changed, so a bare commit range would say nothing.
  {
    ResultsStore s(db_path());
    for (int day = 1; day <= 16; ++day) {
      store(s, day, day <= 8 ? 1e6 : 1.47e6, 2e6, "testhost", day <= 8 ? kTiled192 : kTiled256,
            "3af8ef2");
    }
  }
  write();
  ASSERT_EQ(summary.change_points, 1u);
  const std::string row = table_row(html, "change-points", "resnet50/r0");
  EXPECT_NE(row.find("config changed (1111aaaa2222bbbb \u2192 3333cccc4444dddd): gemm-tiling.mc: "
                     "192 \u2192 256"),
            std::string::npos)
      << row;
  EXPECT_EQ(row.find("3af8ef2..3af8ef2"), std::string::npos) << row;
  EXPECT_NE(row.find("<code>1111aaaa2222bbbb \u2192 3333cccc4444dddd</code>"), std::string::npos)
      << row;
  const std::string svg = chart_of("resnet50/r0");
  EXPECT_NE(svg.find("+47.0% config"), std::string::npos) << svg;
}

TEST_F(Dashboard, AStepWithTheSameConfigNamesItsCommitsOnly) {
  {
    ResultsStore s(db_path());
    for (int day = 1; day <= 16; ++day) {
      store(s, day, day <= 8 ? 1e6 : 1.47e6, 2e6, "testhost", kTiled192);
    }
  }
  write();
  const std::string row = table_row(html, "change-points", "resnet50/r0");
  EXPECT_NE(row.find("<code>c8..c9</code>"), std::string::npos) << row;
  EXPECT_EQ(row.find("config changed"), std::string::npos) << row;
  EXPECT_NE(row.find("<code>1111aaaa2222bbbb</code>"), std::string::npos) << row;
}

TEST(SvgChart, DrawsPointsBandAndMarkers) {
  LatencyChart c;
  c.id = "x";
  c.unit = "ms";
  for (int i = 0; i < 7; ++i) {
    c.points.push_back({10.0 + (i >= 4), 9.5, 11.5 + (i >= 4), "d", "c", "tip <&>", "", i == 2});
  }
  c.markers.push_back({4, true, "+10%", "why"});
  c.markers.push_back({1, false, "-3%", "why"});
  const std::string svg = render_latency_chart(c);
  EXPECT_EQ(count(svg, "<circle class=\"point"), 7u);
  EXPECT_EQ(count(svg, "<circle class=\"point noisy\""), 1u);
  EXPECT_EQ(count(svg, "class=\"change regression\""), 1u);
  EXPECT_EQ(count(svg, "class=\"change improvement\""), 1u);
  EXPECT_NE(svg.find("tip &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(count(svg, "<svg"), count(svg, "</svg>"));
  EXPECT_EQ(count(svg, "<g "), count(svg, "</g>"));
}

TEST(SvgChart, OnePointAndNoPointsStillDraw) {
  LatencyChart one;
  one.points.push_back({5, 5, 5, "d", "c", "t", "", false});
  EXPECT_EQ(count(render_latency_chart(one), "<circle class=\"point"), 1u);
  EXPECT_NE(render_latency_chart(LatencyChart{}).find("no runs"), std::string::npos);
}

TEST(Format, EscapesAndUnits) {
  EXPECT_EQ(escape_markup("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
  EXPECT_EQ(format_time(12345678), "12.35 ms");
  EXPECT_EQ(format_time(1.5e9), "1.5 s");
  EXPECT_EQ(format_time(950), "950 ns");
  EXPECT_EQ(format_p_value(1e-5), "<0.001");
  EXPECT_EQ(format_fixed(5.04, 1, true), "+5.0");
  EXPECT_EQ(short_commit(""), "-");
}

}  // namespace
}  // namespace cuvil::reports::dashboard
