// The interactive flame-graph SVG: well-formed XML, self-contained, every frame as wide as its
// share of the total, tooltips, and the differential colours.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "base/error.h"
#include "reports/flame/flame_svg.h"
#include "reports/flame/op_records.h"
#include "tests/reports/flame_fixture.h"
#include "tests/reports/flame_xml.h"

namespace cuvil::reports::flame {
namespace {

using testing::XmlElement;
using testing::XmlParser;

FrameTree resnet_tree(double scale = 1.0) {
  return tree_from_ops(
      read_op_records(testing::run_with_ops({testing::resnet_like("resnet50/b1", scale)}), "r"));
}

std::vector<const XmlElement*> frames_of(const XmlElement& svg) {
  std::vector<const XmlElement*> out;
  const XmlElement* layer = nullptr;
  for (const auto& c : svg.children) {
    if (c->name == "g" && c->attr("id") == "frames") layer = c.get();
  }
  if (!layer) return out;
  for (const auto& g : layer->children) {
    if (g->name == "g" && g->attr("class") == "f") out.push_back(g.get());
  }
  return out;
}

double number(const std::string& text) {
  return std::stod(text);
}

TEST(FlameSvg, IsWellFormedXmlWithAnSvgRoot) {
  const std::string svg = flame_svg(resnet_tree(), {});
  auto root = XmlParser::parse(svg);
  EXPECT_EQ(root->name, "svg");
  EXPECT_EQ(root->attr("xmlns"), "http://www.w3.org/2000/svg");
}

TEST(FlameSvg, TheCheckerRejectsBrokenXml) {
  EXPECT_THROW(XmlParser::parse("<svg><g></svg>"), std::runtime_error);
  EXPECT_THROW(XmlParser::parse("<svg a=\"1\" a=\"2\"/>"), std::runtime_error);
  EXPECT_THROW(XmlParser::parse("<svg>a & b</svg>"), std::runtime_error);
  EXPECT_THROW(XmlParser::parse("<svg x=1/>"), std::runtime_error);
  EXPECT_THROW(XmlParser::parse("<svg/><svg/>"), std::runtime_error);
  EXPECT_NO_THROW(XmlParser::parse("<?xml version=\"1.0\"?><svg><![CDATA[a < b]]>&amp;</svg>"));
}

TEST(FlameSvg, FrameNamesWithMarkupCharactersAreEscaped) {
  FrameTree tree;
  tree.add_stack({"std::vector<int>::push_back", "a & \"b\" 'c'"}, 3);
  tree.add_stack({"x]]>y"}, 1);
  const std::string svg = flame_svg(tree, {});
  auto root = XmlParser::parse(svg);
  const auto frames = frames_of(*root);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[1]->attr("data-name"), "std::vector<int>::push_back");
  EXPECT_EQ(frames[2]->attr("data-name"), "a & \"b\" 'c'");
}

TEST(FlameSvg, EveryFrameIsAsWideAsItsShareOfTheTotal) {
  for (const int width : {1200, 317}) {
    SvgOptions o;
    o.width = width;
    const FrameTree tree = resnet_tree();
    auto root = XmlParser::parse(flame_svg(tree, o));
    const double plot_w = svg_plot_width(o);
    const double total = number(root->attr("data-total"));
    EXPECT_DOUBLE_EQ(total, tree.total());
    const auto frames = frames_of(*root);
    ASSERT_FALSE(frames.empty());
    for (const XmlElement* g : frames) {
      const XmlElement* rect = g->first("rect");
      ASSERT_NE(rect, nullptr);
      const double expected = number(g->attr("data-total")) / total * plot_w;
      EXPECT_NEAR(number(rect->attr("width")), expected, 0.01) << g->attr("data-name");
      EXPECT_GE(number(rect->attr("x")), kSvgPadX - 1e-3);
      EXPECT_LE(number(rect->attr("x")) + number(rect->attr("width")), kSvgPadX + plot_w + 0.01);
    }
  }
}

TEST(FlameSvg, EveryFrameOfTheTreeIsDrawnOnce) {
  const FrameTree tree = resnet_tree();
  auto root = XmlParser::parse(flame_svg(tree, {}));
  size_t nodes = 0;
  visit_frames(tree.root(), [&](const FrameNode&, size_t) { ++nodes; });
  const auto frames = frames_of(*root);
  EXPECT_EQ(frames.size(), nodes);
  EXPECT_EQ(frames[0]->attr("data-name"), "all");
  EXPECT_NEAR(number(frames[0]->first("rect")->attr("width")), svg_plot_width({}), 1e-3);
}

TEST(FlameSvg, ChildrenSitOnTheirParentLeftToRight) {
  FrameTree tree;
  tree.add_stack({"p", "a"}, 3);
  tree.add_stack({"p", "b"}, 7);
  tree.add_stack({"q"}, 1);
  auto root = XmlParser::parse(flame_svg(tree, {}));
  const auto frames = frames_of(*root);  // all, p, a, b, q: depth first
  ASSERT_EQ(frames.size(), 5u);
  auto x = [&](size_t i) { return number(frames[i]->first("rect")->attr("x")); };
  auto w = [&](size_t i) { return number(frames[i]->first("rect")->attr("width")); };
  auto y = [&](size_t i) { return number(frames[i]->first("rect")->attr("y")); };
  EXPECT_NEAR(x(2), x(1), 1e-3);
  EXPECT_NEAR(x(3), x(2) + w(2), 1e-3);
  EXPECT_NEAR(x(4), x(1) + w(1), 1e-3);
  EXPECT_LT(y(1), y(0));  // the root is at the bottom
  EXPECT_NEAR(y(2), y(3), 1e-9);
}

TEST(FlameSvg, FramesNarrowerThanTheMinimumAreLeftOut) {
  FrameTree tree;
  tree.add_stack({"big"}, 1e7);
  tree.add_stack({"tiny"}, 1);
  auto root = XmlParser::parse(flame_svg(tree, {}));
  const auto frames = frames_of(*root);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1]->attr("data-name"), "big");
}

TEST(FlameSvg, HoverTitleShowsNameTimeAndShare) {
  auto root = XmlParser::parse(flame_svg(resnet_tree(), {}));
  bool seen = false;
  for (const XmlElement* g : frames_of(*root)) {
    if (g->attr("data-name") != "conv2d layer1.0.conv2") continue;
    seen = true;
    const std::string title = g->first("title")->text;
    EXPECT_NE(title.find("conv2d layer1.0.conv2"), std::string::npos) << title;
    EXPECT_NE(title.find("7.3 us"), std::string::npos) << title;
    EXPECT_NE(title.find("49.66%"), std::string::npos) << title;  // 7300 / 14700
  }
  EXPECT_TRUE(seen);
}

TEST(FlameSvg, IsSelfContainedWithZoomAndSearch) {
  const std::string svg = flame_svg(resnet_tree(), {});
  auto root = XmlParser::parse(svg);
  EXPECT_NE(root->first("script"), nullptr);
  EXPECT_NE(root->first("style"), nullptr);
  EXPECT_NE(root->first("script")->text.find("function zoom"), std::string::npos);
  EXPECT_NE(root->first("script")->text.find("function search"), std::string::npos);
  // The only URL is the SVG namespace: nothing is fetched at view time.
  size_t urls = 0;
  for (size_t at = svg.find("http"); at != std::string::npos; at = svg.find("http", at + 1)) {
    ++urls;
  }
  EXPECT_EQ(urls, 1u);
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("src="), std::string::npos);
}

TEST(FlameSvg, NothingToDrawIsAUserError) {
  FrameTree tree;
  EXPECT_THROW(flame_svg(tree, {}), UserError);
  tree.add_stack({"a"}, 0);
  EXPECT_THROW(flame_svg(tree, {}), UserError);
}

TEST(FlameSvg, ASingleFrameFillsThePlot) {
  FrameTree tree("all", "samples");
  tree.add_stack({"only"}, 1);
  auto root = XmlParser::parse(flame_svg(tree, {}));
  const auto frames = frames_of(*root);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_NEAR(number(frames[1]->first("rect")->attr("width")), svg_plot_width({}), 1e-3);
  EXPECT_NE(frames[1]->first("title")->text.find("1 samples"), std::string::npos);
}

TEST(FlameDiffColour, GrowthIsRedShrinkIsBlueUnchangedIsNeutral) {
  const DiffColour grown = diff_colour(100, 130, true);
  EXPECT_EQ(grown.change, Change::grown);
  EXPECT_EQ(grown.r, 255);
  EXPECT_LT(grown.b, grown.r);
  const DiffColour shrunk = diff_colour(100, 70, true);
  EXPECT_EQ(shrunk.change, Change::shrunk);
  EXPECT_EQ(shrunk.b, 255);
  EXPECT_LT(shrunk.r, shrunk.b);
  const DiffColour same = diff_colour(100, 100.5, true);
  EXPECT_EQ(same.change, Change::unchanged);
  EXPECT_EQ(same.r, same.g);
  EXPECT_EQ(same.g, same.b);
  EXPECT_EQ(diff_colour(0, 5, false).change, Change::added);
}

TEST(FlameDiffColour, IntensityGrowsWithTheRelativeChange) {
  EXPECT_GT(diff_colour(100, 103, true).g, diff_colour(100, 120, true).g);
  EXPECT_GT(diff_colour(100, 120, true).g, diff_colour(100, 140, true).g);
  EXPECT_EQ(diff_colour(100, 160, true).g, diff_colour(100, 300, true).g);  // saturated
  EXPECT_GT(diff_colour(100, 97, true).r, diff_colour(100, 80, true).r);
}

TEST(FlameDiffSvg, FramesAreColouredByChangeWithBothTimesInTheTooltip) {
  FrameTree base = resnet_tree();
  // The new run: conv2 50% slower, fc 30% faster, everything else the same.
  auto doc = testing::run_with_ops({testing::resnet_like()});
  auto& records = doc["benchmarks"][1]["cuvil"]["ops"]["records"];
  records[2]["ns_per_iteration"] = 7300 * 1.5;
  records[6]["ns_per_iteration"] = 1300 * 0.7;
  FrameTree now = tree_from_ops(read_op_records(doc, "new.json"));
  now.annotate_with_base(base);
  auto root = XmlParser::parse(flame_svg(now, {}));
  EXPECT_EQ(root->attr("data-differential"), "true");
  std::map<std::string, const XmlElement*> by_name;
  for (const XmlElement* g : frames_of(*root)) by_name[g->attr("data-name")] = g;
  auto fill = [&](const std::string& name) {
    return by_name.at(name)->first("rect")->attr("fill");
  };
  EXPECT_EQ(fill("conv2d layer1.0.conv2"), diff_colour(7300, 10950, true).fill());
  EXPECT_EQ(fill("conv2d layer1.0.conv2").rfind("rgb(255,", 0), 0u);
  EXPECT_EQ(fill("linear fc"), diff_colour(1300, 910, true).fill());
  EXPECT_NE(fill("linear fc").find(",255)"), std::string::npos);
  EXPECT_EQ(fill("conv2d conv1"), "rgb(215,215,215)");
  const std::string title = by_name.at("conv2d layer1.0.conv2")->first("title")->text;
  EXPECT_NE(title.find("base 7.3 us"), std::string::npos) << title;
  EXPECT_NE(title.find("new 10.9 us"), std::string::npos) << title;
  EXPECT_NE(title.find("+50.0%"), std::string::npos) << title;
  // Widths come from the new run.
  EXPECT_DOUBLE_EQ(number(root->attr("data-total")), now.total());
}

TEST(FlameDiffSvg, FramesMissingFromTheBaseAreMarkedNew) {
  FrameTree base, now;
  base.add_stack({"a"}, 5);
  now.add_stack({"a"}, 5);
  now.add_stack({"b"}, 5);
  now.annotate_with_base(base);
  auto root = XmlParser::parse(flame_svg(now, {}));
  const auto frames = frames_of(*root);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[2]->attr("data-in-base"), "false");
  EXPECT_EQ(frames[2]->first("rect")->attr("fill"), diff_colour(0, 5, false).fill());
  EXPECT_NE(frames[2]->first("title")->text.find("not in the base run"), std::string::npos);
}

}  // namespace
}  // namespace cuvil::reports::flame
