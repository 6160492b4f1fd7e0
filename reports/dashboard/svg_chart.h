// The latency-history chart: one point per run (the median) over commits and dates, the run's
// spread as a band, and change points as vertical markers. Plain SVG with its styles inline, so
// it renders the same inside the page and as a file of its own; hover text is SVG <title>.
#pragma once

#include <string>
#include <vector>

namespace cuvil::reports::dashboard {

struct ChartPoint {
  double value = 0;          // in the chart's unit
  double low = 0, high = 0;  // the spread drawn around it
  std::string x_label;       // under the axis: e.g. the date
  std::string x_sublabel;    // the line below it: e.g. the commit
  std::string tooltip;       // shown on hover
  std::string href;          // a link behind the point (the run's flame graph), or empty
  bool hollow = false;       // drawn as a ring (a measurement flagged noisy)
};

struct ChartMarker {
  size_t index = 0;  // the change came in between points index - 1 and index
  bool regression = true;
  std::string label;    // e.g. "+5.2%"
  std::string tooltip;  // shown on hover
};

// The run at `index` used another pipeline config than the run before it.
struct ConfigMarker {
  size_t index = 0;
  std::string tooltip;  // shown on hover: what changed
};

struct LatencyChart {
  std::string id;     // the <svg> element's id
  std::string title;  // its accessible name
  std::string unit;   // of the y axis, e.g. "ms"
  std::vector<ChartPoint> points;
  std::vector<ChartMarker> markers;
  std::vector<ConfigMarker> config_markers;
};

constexpr int kChartWidth = 760;
constexpr int kChartHeight = 270;

// An <svg> element (no XML prolog: valid inline in HTML and, with one, as a file). Every point
// is a <circle class="point">, every marker a <line class="change regression|improvement">,
// every config marker a dotted <line class="config-change"> labelled "config".
std::string render_latency_chart(const LatencyChart& chart);

}  // namespace cuvil::reports::dashboard
