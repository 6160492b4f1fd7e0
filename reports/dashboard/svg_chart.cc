#include "reports/dashboard/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "reports/dashboard/format.h"
#include "reports/dashboard/style.h"

namespace cuvil::reports::dashboard {

namespace {

constexpr double kLeft = 70, kRight = 48, kTop = 22, kBottom = 44;
constexpr double kPointRadius = 3.5;
constexpr size_t kMaxXLabels = 8;
constexpr int kYTicks = 4;
// The y range is padded by this share so the band never touches the frame.
constexpr double kYPad = 0.08;

struct Scale {
  double lo = 0, hi = 1;
  size_t n = 0;
  double plot_w = kChartWidth - kLeft - kRight, plot_h = kChartHeight - kTop - kBottom;
  double x(size_t i) const {
    return n <= 1 ? kLeft + plot_w / 2 : kLeft + plot_w * static_cast<double>(i) / (n - 1.0);
  }
  double y(double v) const { return kTop + plot_h * (1 - (v - lo) / (hi - lo)); }
};

Scale scale_for(const std::vector<ChartPoint>& points) {
  Scale s;
  s.n = points.size();
  if (points.empty()) return s;
  double lo = points[0].low, hi = points[0].high;
  for (const ChartPoint& p : points) {
    lo = std::min({lo, p.low, p.value});
    hi = std::max({hi, p.high, p.value});
  }
  if (!(hi > lo)) {  // one value: show it centred in a +-5% window
    const double half = lo != 0 ? std::fabs(lo) * 0.05 : 1.0;
    lo -= half;
    hi += half;
  }
  const double pad = (hi - lo) * kYPad;
  s.lo = std::max(0.0, lo - pad);
  s.hi = hi + pad;
  return s;
}

void grid_and_axes(std::string& out, const Scale& s, const LatencyChart& chart) {
  const double step = nice_step((s.hi - s.lo) / kYTicks);
  for (double v = std::ceil(s.lo / step) * step; v <= s.hi + step * 1e-9; v += step) {
    const std::string y = svg_num(s.y(v));
    out += "<line x1=\"" + svg_num(kLeft) + "\" x2=\"" + svg_num(kChartWidth - kRight) +
           "\" y1=\"" + y + "\" y2=\"" + y + "\" stroke=\"" + kGridColor + "\"/>";
    out += "<text class=\"y-tick\" x=\"" + svg_num(kLeft - 6) + "\" y=\"" + svg_num(s.y(v) + 4) +
           "\" text-anchor=\"end\">" + tick_label(v, step) + "</text>";
  }
  out += "<text class=\"y-unit\" x=\"12\" y=\"" + svg_num(kTop - 8) + "\">" +
         escape_markup(chart.unit) + "</text>";
  // At most kMaxXLabels, evenly spaced, and none that repeats the label drawn before it (runs of
  // one day and one commit would otherwise all read the same).
  const size_t stride = (chart.points.size() + kMaxXLabels - 1) / kMaxXLabels;
  const ChartPoint* last = nullptr;
  for (size_t i = 0; i < chart.points.size(); i += std::max<size_t>(stride, 1)) {
    const ChartPoint& p = chart.points[i];
    if (last && last->x_label == p.x_label && last->x_sublabel == p.x_sublabel) continue;
    last = &p;
    const std::string x = svg_num(s.x(i));
    out += "<text class=\"x-label\" x=\"" + x + "\" y=\"" + svg_num(kChartHeight - kBottom + 16) +
           "\" text-anchor=\"middle\">" + escape_markup(p.x_label) + "<tspan x=\"" + x +
           "\" dy=\"13\">" + escape_markup(p.x_sublabel) + "</tspan></text>";
  }
}

void spread_band(std::string& out, const Scale& s, const std::vector<ChartPoint>& points) {
  if (points.size() == 1) {
    const double top = s.y(points[0].high), bottom = s.y(points[0].low);
    out += "<rect class=\"spread\" x=\"" + svg_num(s.x(0) - 4) + "\" y=\"" + svg_num(top) +
           "\" width=\"8\" height=\"" + svg_num(std::max(bottom - top, 0.5)) + "\" fill=\"" +
           kLineColor + "\" fill-opacity=\"0.18\"/>";
    return;
  }
  std::string d;
  for (size_t i = 0; i < points.size(); ++i) {
    d += i ? " L" : "M";
    d += svg_num(s.x(i)) + " " + svg_num(s.y(points[i].high));
  }
  for (size_t i = points.size(); i-- > 0;)
    d += " L" + svg_num(s.x(i)) + " " + svg_num(s.y(points[i].low));
  out += "<path class=\"spread\" d=\"" + d + " Z\" fill=\"" + kLineColor +
         "\" fill-opacity=\"0.18\" stroke=\"none\"/>";
}

void markers(std::string& out, const Scale& s, const LatencyChart& chart) {
  for (const ChartMarker& m : chart.markers) {
    if (m.index == 0 || m.index >= chart.points.size()) continue;
    const double x = (s.x(m.index - 1) + s.x(m.index)) / 2;
    const char* color = m.regression ? kRegressionColor : kImprovementColor;
    out +=
        std::string("<g class=\"change-marker\"><title>") + escape_markup(m.tooltip) + "</title>";
    out += std::string("<line class=\"change ") + (m.regression ? "regression" : "improvement") +
           "\" x1=\"" + svg_num(x) + "\" x2=\"" + svg_num(x) + "\" y1=\"" + svg_num(kTop) +
           "\" y2=\"" + svg_num(kChartHeight - kBottom) + "\" stroke=\"" + color +
           "\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/>";
    out += "<text class=\"change-label\" x=\"" + svg_num(x + 4) + "\" y=\"" + svg_num(kTop - 6) +
           "\" fill=\"" + color + "\">" + escape_markup(m.label) + "</text></g>";
  }
}

// Under the change markers (a step that came with a config change shows both lines).
void config_markers(std::string& out, const Scale& s, const LatencyChart& chart) {
  for (const ConfigMarker& m : chart.config_markers) {
    if (m.index == 0 || m.index >= chart.points.size()) continue;
    const double mid = (s.x(m.index - 1) + s.x(m.index)) / 2;
    const std::string x = svg_num(mid);
    out += "<g class=\"config-marker\"><title>" + escape_markup(m.tooltip) + "</title>";
    out += "<line class=\"config-change\" x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + svg_num(kTop) +
           "\" y2=\"" + svg_num(kChartHeight - kBottom) + "\" stroke=\"" + kConfigColor +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"1 3\"/>";
    out += "<text class=\"config-label\" x=\"" + svg_num(mid + 4) + "\" y=\"" +
           svg_num(kChartHeight - kBottom - 5) + "\" fill=\"" + kConfigColor +
           "\">config</text></g>";
  }
}

void median_line_and_points(std::string& out, const Scale& s, const LatencyChart& chart) {
  std::string line;
  for (size_t i = 0; i < chart.points.size(); ++i) {
    if (i) line += ' ';
    line += svg_num(s.x(i)) + "," + svg_num(s.y(chart.points[i].value));
  }
  out += "<polyline class=\"median\" points=\"" + line + "\" fill=\"none\" stroke=\"" + kLineColor +
         "\" stroke-width=\"1.8\"/>";
  for (size_t i = 0; i < chart.points.size(); ++i) {
    const ChartPoint& p = chart.points[i];
    std::string circle = "<circle class=\"point" + std::string(p.hollow ? " noisy" : "") +
                         "\" data-index=\"" + std::to_string(i) + "\" cx=\"" + svg_num(s.x(i)) +
                         "\" cy=\"" + svg_num(s.y(p.value)) + "\" r=\"" + svg_num(kPointRadius) +
                         "\" fill=\"" + (p.hollow ? "#fff" : kLineColor) + "\" stroke=\"" +
                         kLineColor + "\" stroke-width=\"1.5\"><title>" + escape_markup(p.tooltip) +
                         "</title></circle>";
    if (!p.href.empty()) circle = "<a href=\"" + escape_markup(p.href) + "\">" + circle + "</a>";
    out += circle;
  }
}

}  // namespace

std::string render_latency_chart(const LatencyChart& chart) {
  const Scale s = scale_for(chart.points);
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"" +
                    escape_markup(chart.id) + "\" width=\"" + std::to_string(kChartWidth) +
                    "\" height=\"" + std::to_string(kChartHeight) + "\" viewBox=\"0 0 " +
                    std::to_string(kChartWidth) + " " + std::to_string(kChartHeight) +
                    "\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\" fill=\"" +
                    kTextColor + "\"><title>" + escape_markup(chart.title) + "</title>";
  if (chart.points.empty()) {
    out += "<text x=\"" + svg_num(kChartWidth / 2.0) + "\" y=\"" + svg_num(kChartHeight / 2.0) +
           "\" text-anchor=\"middle\">no runs</text></svg>";
    return out;
  }
  grid_and_axes(out, s, chart);
  spread_band(out, s, chart.points);
  config_markers(out, s, chart);
  markers(out, s, chart);
  median_line_and_points(out, s, chart);
  out += "</svg>";
  return out;
}

}  // namespace cuvil::reports::dashboard
