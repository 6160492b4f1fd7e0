// The pictures the commands write beside their output (reports/pictures/): axes titled, every
// datum drawn, the reference lines where the data put them, and well-formed SVG.
#include <gtest/gtest.h>

#include <string>

#include "reports/pictures/baseline_bars.h"
#include "reports/pictures/plot.h"
#include "reports/pictures/roofline.h"
#include "reports/pictures/serve_curve.h"

namespace cuvil::reports::pictures {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

Mark mark(double x, double y) {
  Mark m;
  m.x = x;
  m.y = y;
  m.color = "#000";
  return m;
}

Bar bar(double value) {
  Bar b;
  b.value = value;
  return b;
}

void expect_balanced(const std::string& svg) {
  EXPECT_EQ(count(svg, "<svg"), count(svg, "</svg>"));
  EXPECT_EQ(count(svg, "<g"), count(svg, "</g>") + count(svg, "<g/>"));
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
}

TEST(Plot, AxesAreTitledAndEveryMarkIsDrawn) {
  XyPlot p;
  p.id = "t";
  p.title = "a <title>";
  p.x.title = "x (s)";
  p.y.title = "y (ms)";
  for (int i = 1; i <= 4; ++i) p.marks.push_back(mark(i, i * 10.0));
  Line line;
  line.points = {{1, 10}, {4, 40}};
  line.color = "#111";
  p.lines.push_back(line);
  const std::string svg = render_xy(p);
  EXPECT_NE(svg.find("<text class=\"axis-title x\""), std::string::npos);
  EXPECT_NE(svg.find(">x (s)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">y (ms)</text>"), std::string::npos);
  EXPECT_NE(svg.find("a &lt;title&gt;"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"point"), 4u);
  EXPECT_EQ(count(svg, "<polyline"), 1u);
  expect_balanced(svg);
}

TEST(Plot, LogAxesTickEachDecade) {
  XyPlot p;
  p.x.log = p.y.log = true;
  p.marks.push_back(mark(0.5, 3));
  p.marks.push_back(mark(200, 4000));
  p.marks.push_back(mark(-1, 5));  // not drawable on a log axis
  const std::string svg = render_xy(p);
  EXPECT_EQ(count(svg, "class=\"point"), 2u);
  for (const char* tick : {">0.1<", ">1<", ">10<", ">100<", ">1000<"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
}

TEST(Plot, NoDataSaysSo) {
  XyPlot p;
  p.empty_text = "nothing here";
  EXPECT_NE(render_xy(p).find("nothing here"), std::string::npos);
  BarChart c;
  c.empty_text = "no bars";
  EXPECT_NE(render_bars(c).find("no bars"), std::string::npos);
}

TEST(Plot, BarsWithIntervalsAndMissingOnes) {
  BarChart c;
  c.value.title = "share (%)";
  c.category_title = "parameter";
  c.series = {{"a", "#111"}, {"b", "#222"}};
  c.categories = {"p1", "p2"};
  Bar with_ci = bar(40);
  with_ci.low = 30;
  with_ci.high = 50;
  Bar missing;
  missing.missing = true;
  missing.text = "no value";
  c.bars = {{with_ci, bar(20)}, {bar(10), missing}};
  const std::string svg = render_bars(c);
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 3u);
  EXPECT_EQ(count(svg, "class=\"interval\""), 1u);
  EXPECT_NE(svg.find(">no value</text>"), std::string::npos);
  EXPECT_NE(svg.find(">share (%)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">parameter</text>"), std::string::npos);
  expect_balanced(svg);
}

TEST(Plot, BesideReplacesTheExtension) {
  EXPECT_EQ(beside("out/run.json", ".roofline.svg"), "out/run.roofline.svg");
  EXPECT_EQ(beside("tuned.cuvilpass", ".history.svg"), "tuned.history.svg");
}

TEST(ServeCurve, PercentilesSloAndKnee) {
  LoadLatencyCurve c;
  c.name = "resnet50/b1";
  c.slo_ms = 15;
  c.steps = {{20, 20, 5, 6, 8, 100, true, "ok"},
             {10, 10, 4, 5, 6, 100, true, "ok"},
             {40, 30, 12, 20, 30, 100, false, "p99 over the target"}};
  c.knee = 0;
  const std::string svg = load_latency_svg(c);
  EXPECT_EQ(count(svg, "class=\"point step"), 3u);
  EXPECT_EQ(count(svg, "class=\"point step invalid\""), 1u);
  EXPECT_NE(svg.find("class=\"ref slo\""), std::string::npos);
  EXPECT_NE(svg.find("knee 20 queries/s"), std::string::npos);
  EXPECT_NE(svg.find(">offered load (queries/s)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">latency (ms)</text>"), std::string::npos);
  for (const char* cls :
       {"class=\"p50\"", "class=\"p90\"", "class=\"p99\"", "p50-p90", "p90-p99"}) {
    EXPECT_NE(svg.find(cls), std::string::npos) << cls;
  }
  expect_balanced(svg);
}

TEST(Roofline, OpsUnderTheRoofsColouredByLowering) {
  Roofline r;
  r.name = "toy";
  r.peak_gflops = 100;
  r.peak_gbps = 10;  // ridge at 10 FLOP/byte
  r.ops = {{"b1", "conv1", "conv2d", "conv2d.im2col", "generated", 2e6, 1e5, 4e4},
           {"b1", "fc", "linear", "gemm", "onednn", 1e6, 1e6, 2e5},
           {"b1", "reshape", "reshape", "view", "generated", 0, 0, 10}};
  const std::string svg = roofline_svg(r);
  EXPECT_EQ(count(svg, "class=\"point op"), 2u);
  EXPECT_EQ(count(svg, "lowering-generated"), 1u);
  EXPECT_EQ(count(svg, "lowering-onednn"), 1u);
  EXPECT_NE(svg.find("class=\"roof\""), std::string::npos);
  EXPECT_NE(svg.find("ridge at 10 FLOP/byte"), std::string::npos);
  EXPECT_NE(svg.find("1 op(s) without FLOPs not drawn"), std::string::npos);
  EXPECT_NE(svg.find(">arithmetic intensity (FLOP/byte, log scale)</text>"), std::string::npos);
  expect_balanced(svg);
}

// With a bf16 peak, a second dashed roof at it: its ridge sits at 2x the fp32 one here.
TEST(Roofline, Bf16OpsGetADashedRoofOfTheirOwn) {
  Roofline r;
  r.name = "toy";
  r.peak_gflops = 100;
  r.precision_roofs = {{"bf16", 200}};
  r.peak_gbps = 10;
  r.ops = {{"b1", "conv1", "conv2d", "conv2d.bf16", "generated", 2e6, 1e5, 4e4}};
  const std::string svg = roofline_svg(r);
  EXPECT_EQ(count(svg, "class=\"roof\""), 1u);
  EXPECT_EQ(count(svg, "class=\"roof bf16\""), 1u);
  EXPECT_NE(svg.find("ridge at 20 FLOP/byte"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find("bf16 200 GFLOP/s (dashed)"), std::string::npos);
  r.precision_roofs.clear();
  EXPECT_EQ(count(roofline_svg(r), "roof bf16"), 0u);
  expect_balanced(svg);
}

TEST(BaselineBars, MediansIntervalsAndSpeedups) {
  BaselineChart c;
  c.variants = {"cuvil", "torch-eager", "torch-script"};
  c.rungs = {{"toy/b1",
              {{"cuvil", true, 1, 0.9, 1.1, ""},
               {"torch-eager", true, 2, 1.8, 2.2, ""},
               {"torch-script", false, 0, 0, 0, "not a module"}}}};
  const std::string svg = baseline_bars_svg(c);
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 2u);
  EXPECT_EQ(count(svg, "class=\"interval\""), 2u);
  EXPECT_NE(svg.find("speed-up 2.00x"), std::string::npos);
  EXPECT_NE(svg.find("torch-script: not measured (not a module)"), std::string::npos);
  EXPECT_NE(svg.find(">median latency (ms)</text>"), std::string::npos);
  expect_balanced(svg);
}

}  // namespace
}  // namespace cuvil::reports::pictures
