// The drawing under every picture the commands write beside their output (docs/reports.md
// § Pictures): an x-y plot (points, lines, bands, reference lines; linear or log axes) and a
// horizontal bar chart (grouped bars with intervals). Plain SVG in the dashboard's style
// (reports/dashboard/style.h), no script and no font to load, so a file opens anywhere and an
// <svg> can be put inline in an HTML report. Hover text is SVG <title>.
//
// What tests and readers can rely on: the axis titles are <text class="axis-title x|y">, every
// data point is an element of class "point" (a <circle> or <path>), every bar a <rect
// class="bar">, every reference line a <line class="ref ...">.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cuvil::reports::pictures {

struct Axis {
  std::string title;               // with its unit: "offered load (queries/s)"
  bool log = false;                // base 10; values <= 0 are not drawn on it
  std::optional<double> min, max;  // fixed ends; otherwise from the data, padded
  bool include_zero = false;       // a linear axis from the data, stretched to 0
};

enum class Shape { kCircle, kRing, kCross, kDiamond };

struct Mark {
  double x = 0, y = 0;
  std::string color;
  Shape shape = Shape::kCircle;
  std::string css_class;  // added to "point"
  std::string tooltip;
};

struct Line {
  std::vector<std::pair<double, double>> points;  // in data units, drawn in this order
  std::string color;
  double width = 1.8;
  bool dashed = false;
  bool steps = false;     // horizontal then vertical between points (best so far)
  std::string css_class;  // the <polyline>'s class
  std::string label;      // drawn at the last point; empty: none
  std::string tooltip;
};

struct Band {  // the area between low and high over x
  std::vector<double> x, low, high;
  std::string color;
  double opacity = 0.15;
  std::string css_class;
};

// A horizontal (y = value) or vertical (x = value) line across the plot, labelled.
struct RefLine {
  bool vertical = false;
  double value = 0;
  std::string color;
  std::string label;
  std::string css_class;  // added to "ref"
  std::string tooltip;
};

struct LegendEntry {
  std::string label, color;
  bool line = false;  // a stroke; else a filled square
};

struct XyPlot {
  std::string id, title;  // the title is drawn on top and is the picture's accessible name
  std::string subtitle;   // a second line under it; optional
  Axis x, y;
  int width = 760, height = 400;
  std::vector<Band> bands;
  std::vector<Line> lines;
  std::vector<RefLine> refs;
  std::vector<Mark> marks;
  std::vector<LegendEntry> legend;     // drawn under the plot
  std::string empty_text = "no data";  // drawn instead of the plot when nothing is in range
};

// The <svg> element (no XML prolog): valid inline in HTML.
std::string render_xy(const XyPlot& plot);

struct Bar {
  double value = 0;
  std::optional<double> low, high;  // an interval drawn as a whisker
  std::string tooltip;
  std::string text;      // written after the bar (e.g. "failed: wrong result"); optional
  bool missing = false;  // no bar, only the text
};

struct BarSeries {
  std::string name, color;
};

struct BarChart {
  std::string id, title, subtitle;
  Axis value;                           // the horizontal axis (log is not supported)
  std::string category_title;           // the vertical axis: what each row is
  double origin = 0;                    // bars run from here to their value (ratios: 1)
  std::vector<BarSeries> series;        // the bars of one row, top to bottom
  std::vector<std::string> categories;  // the rows, top to bottom
  std::vector<std::vector<Bar>> bars;   // [category][series]
  std::optional<double> ref;            // a vertical reference line (e.g. 1 for ratios)
  std::string ref_label;
  int width = 760;
  std::string empty_text = "no data";
};

std::string render_bars(const BarChart& chart);

// A standalone SVG file: the XML prolog, the element, a newline.
std::string svg_file(const std::string& svg_element);

// Writes `text` to `path` atomically (a reader never sees half a picture); UserError naming the
// path when it cannot.
void write_picture(const std::string& path, const std::string& text);

// The file beside `path` for a picture: `path` less its extension (".json", ".cuvilpass"), then
// `suffix` (".roofline.svg").
std::string beside(const std::string& path, const std::string& suffix);

}  // namespace cuvil::reports::pictures
