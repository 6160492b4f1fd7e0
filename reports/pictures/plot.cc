#include "reports/pictures/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/error.h"
#include "reports/dashboard/format.h"
#include "reports/dashboard/style.h"
#include "reports/markup.h"

namespace cuvil::reports::pictures {

namespace {

using dashboard::kFrameColor;
using dashboard::kGridColor;
using dashboard::kTextColor;
using dashboard::nice_step;
using dashboard::svg_num;
using dashboard::tick_label;

constexpr double kPointRadius = 3.5;
constexpr double kPad = 0.06;       // of a linear axis's span, each side
constexpr int kLinearTicks = 5;     // about this many
constexpr double kCharWidth = 6.2;  // of the 11px font, for laying out text without a font
constexpr double kTitleY = 18, kSubtitleY = 34;

double top_margin(const std::string& subtitle) {
  return subtitle.empty() ? 34 : 48;
}

std::string title_block(const std::string& title, const std::string& subtitle, int width) {
  std::string out =
      "<text class=\"picture-title\" x=\"" + svg_num(width / 2.0) + "\" y=\"" + svg_num(kTitleY) +
      "\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\" fill=\"#222\">" +
      escape_markup(title) + "</text>";
  if (!subtitle.empty()) {
    // Too long for the picture: squeezed to its width rather than cut at the edges.
    const double room = width - 20.0;
    const std::string fit =
        kCharWidth * static_cast<double>(subtitle.size()) > room
            ? " textLength=\"" + svg_num(room) + "\" lengthAdjust=\"spacingAndGlyphs\""
            : "";
    out += "<text class=\"picture-subtitle\" x=\"" + svg_num(width / 2.0) + "\" y=\"" +
           svg_num(kSubtitleY) + "\" text-anchor=\"middle\"" + fit + ">" + escape_markup(subtitle) +
           "</text>";
  }
  return out;
}

// One axis's data-to-pixel map: [lo, hi] onto [from, to] (to < from for y, which grows up).
struct Scale {
  bool log = false;
  double lo = 0, hi = 1;
  double from = 0, to = 1;
  double operator()(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                         : (v - lo) / (hi - lo);
    return from + (to - from) * t;
  }
  bool drawable(double v) const { return std::isfinite(v) && (!log || v > 0); }
};

// The data range of one axis (values not drawable on it ignored); nullopt when there is none.
struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool log = false;
  void add(double v) {
    if (!std::isfinite(v) || (log && v <= 0)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
};

Scale scale_for(const Axis& axis, Range r, double from, double to) {
  Scale s;
  s.log = axis.log;
  s.from = from;
  s.to = to;
  if (r.empty()) {
    r.lo = axis.log ? 1 : 0;
    r.hi = axis.log ? 10 : 1;
  }
  if (axis.log) {
    double lo = axis.min ? *axis.min : std::pow(10.0, std::floor(std::log10(r.lo)));
    double hi = axis.max ? *axis.max : std::pow(10.0, std::ceil(std::log10(r.hi)));
    if (!(hi > lo)) hi = lo * 10;
    s.lo = lo;
    s.hi = hi;
    return s;
  }
  double lo = r.lo, hi = r.hi;
  if (axis.include_zero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (!(hi > lo)) {
    const double half = lo != 0 ? std::fabs(lo) * 0.05 : 1.0;
    lo -= half;
    hi += half;
  }
  const double pad = (hi - lo) * kPad;
  // With include_zero, zero stays the edge it is: bars and rates start on the frame.
  lo = axis.include_zero && lo == 0 ? 0 : lo - pad;
  hi = axis.include_zero && hi == 0 ? 0 : hi + pad;
  s.lo = axis.min ? *axis.min : lo;
  s.hi = axis.max ? *axis.max : hi;
  if (!(s.hi > s.lo)) s.hi = s.lo + 1;
  return s;
}

struct Tick {
  double value;
  std::string label;
};

std::vector<Tick> ticks_of(const Scale& s) {
  std::vector<Tick> out;
  if (s.log) {
    for (double e = std::ceil(std::log10(s.lo) - 1e-9); e <= std::log10(s.hi) + 1e-9; ++e) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", std::pow(10.0, e));
      out.push_back({std::pow(10.0, e), buf});
    }
    return out;
  }
  const double step = nice_step((s.hi - s.lo) / kLinearTicks);
  for (double v = std::ceil(s.lo / step - 1e-9) * step; v <= s.hi + step * 1e-9; v += step) {
    out.push_back({v, tick_label(v, step)});
  }
  return out;
}

std::string line_attrs(const std::string& color, double width, bool dashed) {
  return " fill=\"none\" stroke=\"" + color + "\" stroke-width=\"" + svg_num(width) + "\"" +
         (dashed ? " stroke-dasharray=\"6 4\"" : "");
}

std::string tooltip_of(const std::string& text) {
  return text.empty() ? "" : "<title>" + escape_markup(text) + "</title>";
}

std::string mark_svg(const Mark& m, double x, double y) {
  const std::string cls = "point" + (m.css_class.empty() ? "" : " " + m.css_class);
  const std::string tip = tooltip_of(m.tooltip);
  const double r = kPointRadius;
  switch (m.shape) {
    case Shape::kCircle:
    case Shape::kRing:
      return "<circle class=\"" + cls + "\" cx=\"" + svg_num(x) + "\" cy=\"" + svg_num(y) +
             "\" r=\"" + svg_num(r) + "\" fill=\"" +
             (m.shape == Shape::kRing ? std::string("#fff") : m.color) + "\" stroke=\"" + m.color +
             "\" stroke-width=\"1.5\">" + tip + "</circle>";
    case Shape::kCross:
      return "<path class=\"" + cls + "\" d=\"M" + svg_num(x - r) + " " + svg_num(y - r) + " L" +
             svg_num(x + r) + " " + svg_num(y + r) + " M" + svg_num(x - r) + " " + svg_num(y + r) +
             " L" + svg_num(x + r) + " " + svg_num(y - r) + "\" stroke=\"" + m.color +
             "\" stroke-width=\"2\" fill=\"none\">" + tip + "</path>";
    case Shape::kDiamond:
      return "<path class=\"" + cls + "\" d=\"M" + svg_num(x) + " " + svg_num(y - r - 1) + " L" +
             svg_num(x + r + 1) + " " + svg_num(y) + " L" + svg_num(x) + " " + svg_num(y + r + 1) +
             " L" + svg_num(x - r - 1) + " " + svg_num(y) + " Z\" fill=\"" + m.color +
             "\" stroke=\"" + m.color + "\">" + tip + "</path>";
  }
  return {};
}

std::string legend_svg(const std::vector<LegendEntry>& legend, double x, double y) {
  std::string out = "<g class=\"legend\">";
  for (const LegendEntry& e : legend) {
    if (e.line) {
      out += "<line x1=\"" + svg_num(x) + "\" x2=\"" + svg_num(x + 16) + "\" y1=\"" +
             svg_num(y - 4) + "\" y2=\"" + svg_num(y - 4) + "\"" + line_attrs(e.color, 2, false) +
             "/>";
    } else {
      out += "<rect x=\"" + svg_num(x + 2) + "\" y=\"" + svg_num(y - 10) +
             "\" width=\"11\" height=\"11\" fill=\"" + e.color + "\"/>";
    }
    out += "<text x=\"" + svg_num(x + 21) + "\" y=\"" + svg_num(y) + "\">" +
           escape_markup(e.label) + "</text>";
    x += 21 + kCharWidth * static_cast<double>(e.label.size()) + 18;
  }
  return out + "</g>";
}

std::string axis_titles(const std::string& x_title, const std::string& y_title, double left,
                        double right, double top, double bottom) {
  return "<text class=\"axis-title x\" x=\"" + svg_num((left + right) / 2) + "\" y=\"" +
         svg_num(bottom + 34) + "\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\">" +
         escape_markup(x_title) + "</text><text class=\"axis-title y\" x=\"0\" y=\"0\" " +
         "transform=\"translate(16 " + svg_num((top + bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\">" +
         escape_markup(y_title) + "</text>";
}

std::string frame(double left, double right, double top, double bottom) {
  return "<rect class=\"frame\" x=\"" + svg_num(left) + "\" y=\"" + svg_num(top) + "\" width=\"" +
         svg_num(right - left) + "\" height=\"" + svg_num(bottom - top) +
         "\" fill=\"none\" stroke=\"" + kFrameColor + "\"/>";
}

}  // namespace

std::string render_xy(const XyPlot& p) {
  bool labels = false;
  for (const Line& l : p.lines) labels = labels || !l.label.empty();
  const double left = 78, right = p.width - (labels ? 96.0 : 24.0);
  const double top = top_margin(p.subtitle);
  const double bottom = p.height - (p.legend.empty() ? 46.0 : 66.0);

  Range rx, ry;
  rx.log = p.x.log;
  ry.log = p.y.log;
  for (const Mark& m : p.marks) {
    rx.add(m.x);
    ry.add(m.y);
  }
  for (const Line& l : p.lines) {
    for (const auto& [x, y] : l.points) {
      rx.add(x);
      ry.add(y);
    }
  }
  for (const Band& b : p.bands) {
    for (double x : b.x) rx.add(x);
    for (double v : b.low) ry.add(v);
    for (double v : b.high) ry.add(v);
  }
  for (const RefLine& r : p.refs) (r.vertical ? rx : ry).add(r.value);

  std::string out = dashboard::svg_start(p.id, "picture", p.title, p.width, p.height);
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>";
  out += title_block(p.title, p.subtitle, p.width);
  out += axis_titles(p.x.title, p.y.title, left, right, top, bottom);
  if (rx.empty() || ry.empty()) {
    out += frame(left, right, top, bottom);
    out += "<text class=\"empty\" x=\"" + svg_num((left + right) / 2) + "\" y=\"" +
           svg_num((top + bottom) / 2) + "\" text-anchor=\"middle\">" +
           escape_markup(p.empty_text) + "</text></svg>";
    return out;
  }
  const Scale sx = scale_for(p.x, rx, left, right);
  const Scale sy = scale_for(p.y, ry, bottom, top);

  for (const Tick& t : ticks_of(sx)) {
    const std::string x = svg_num(sx(t.value));
    out += "<line x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + svg_num(top) + "\" y2=\"" +
           svg_num(bottom) + "\" stroke=\"" + kGridColor + "\"/><text class=\"x-tick\" x=\"" + x +
           "\" y=\"" + svg_num(bottom + 15) + "\" text-anchor=\"middle\">" + t.label + "</text>";
  }
  for (const Tick& t : ticks_of(sy)) {
    const std::string y = svg_num(sy(t.value));
    out += "<line x1=\"" + svg_num(left) + "\" x2=\"" + svg_num(right) + "\" y1=\"" + y +
           "\" y2=\"" + y + "\" stroke=\"" + kGridColor + "\"/><text class=\"y-tick\" x=\"" +
           svg_num(left - 6) + "\" y=\"" + svg_num(sy(t.value) + 4) + "\" text-anchor=\"end\">" +
           t.label + "</text>";
  }

  const std::string clip = p.id + "-plot";
  out += "<clipPath id=\"" + escape_markup(clip) + "\"><rect x=\"" + svg_num(left) + "\" y=\"" +
         svg_num(top) + "\" width=\"" + svg_num(right - left) + "\" height=\"" +
         svg_num(bottom - top) + "\"/></clipPath><g clip-path=\"url(#" + escape_markup(clip) +
         ")\">";
  for (const Band& b : p.bands) {
    std::string d;
    for (size_t i = 0; i < b.x.size() && i < b.high.size(); ++i) {
      if (!sx.drawable(b.x[i]) || !sy.drawable(b.high[i])) continue;
      d += (d.empty() ? "M" : " L") + svg_num(sx(b.x[i])) + " " + svg_num(sy(b.high[i]));
    }
    for (size_t i = std::min(b.x.size(), b.low.size()); i-- > 0;) {
      if (!sx.drawable(b.x[i]) || !sy.drawable(b.low[i])) continue;
      d += " L" + svg_num(sx(b.x[i])) + " " + svg_num(sy(b.low[i]));
    }
    if (d.empty()) continue;
    out += "<path class=\"band" + (b.css_class.empty() ? "" : " " + b.css_class) + "\" d=\"" + d +
           " Z\" fill=\"" + b.color + "\" fill-opacity=\"" + svg_num(b.opacity) +
           "\" stroke=\"none\"/>";
  }
  for (const RefLine& r : p.refs) {
    if (!(r.vertical ? sx : sy).drawable(r.value)) continue;
    const double v = r.vertical ? sx(r.value) : sy(r.value);
    out += "<g class=\"ref" + (r.css_class.empty() ? "" : " " + r.css_class) + "\">" +
           tooltip_of(r.tooltip) + "<line class=\"ref" +
           (r.css_class.empty() ? "" : " " + r.css_class) + "\" x1=\"" +
           svg_num(r.vertical ? v : left) + "\" x2=\"" + svg_num(r.vertical ? v : right) +
           "\" y1=\"" + svg_num(r.vertical ? top : v) + "\" y2=\"" +
           svg_num(r.vertical ? bottom : v) + "\"" + line_attrs(r.color, 1.6, true) + "/>";
    if (!r.label.empty()) {
      // A vertical line's label at its foot, a horizontal one's at its right end: they do not
      // meet in the top corner.
      out += r.vertical ? "<text x=\"" + svg_num(v + 4) + "\" y=\"" + svg_num(bottom - 6) +
                              "\" fill=\"" + r.color + "\">" + escape_markup(r.label) + "</text>"
                        : "<text x=\"" + svg_num(right - 4) + "\" y=\"" + svg_num(v - 4) +
                              "\" text-anchor=\"end\" fill=\"" + r.color + "\">" +
                              escape_markup(r.label) + "</text>";
    }
    out += "</g>";
  }
  for (const Line& l : p.lines) {
    std::string pts;
    double last_y = 0;
    bool first = true;
    for (const auto& [x, y] : l.points) {
      if (!sx.drawable(x) || !sy.drawable(y)) continue;
      if (l.steps && !first) pts += " " + svg_num(sx(x)) + "," + svg_num(last_y);
      pts += (first ? "" : " ") + svg_num(sx(x)) + "," + svg_num(sy(y));
      last_y = sy(y);
      first = false;
    }
    if (pts.empty()) continue;
    out += "<polyline class=\"" + escape_markup(l.css_class) + "\" points=\"" + pts + "\"" +
           line_attrs(l.color, l.width, l.dashed) + ">" + tooltip_of(l.tooltip) + "</polyline>";
  }
  out += "</g>";
  // Line labels and marks are not clipped: a label sits in the right margin, and a point on
  // the frame stays whole.
  struct Label {
    double x, y;
    const Line* line;
  };
  std::vector<Label> line_labels;
  for (const Line& l : p.lines) {
    if (l.label.empty() || l.points.empty()) continue;
    const auto& [x, y] = l.points.back();
    if (!sx.drawable(x) || !sy.drawable(y)) continue;
    line_labels.push_back({std::min(sx(x), right) + 6, std::clamp(sy(y), top, bottom) + 4, &l});
  }
  // Lines that end close together (p90 and p99 at light load) get their labels moved apart.
  std::sort(line_labels.begin(), line_labels.end(),
            [](const Label& a, const Label& b) { return a.y < b.y; });
  for (size_t i = 1; i < line_labels.size(); ++i) {
    line_labels[i].y = std::max(line_labels[i].y, line_labels[i - 1].y + 12);
  }
  for (const Label& l : line_labels) {
    out += "<text class=\"line-label\" x=\"" + svg_num(l.x) + "\" y=\"" + svg_num(l.y) +
           "\" fill=\"" + l.line->color + "\">" + escape_markup(l.line->label) + "</text>";
  }
  for (const Mark& m : p.marks) {
    if (!sx.drawable(m.x) || !sy.drawable(m.y)) continue;
    out += mark_svg(m, sx(m.x), sy(m.y));
  }
  out += frame(left, right, top, bottom);
  if (!p.legend.empty()) out += legend_svg(p.legend, left, bottom + 56);
  return out + "</svg>";
}

std::string render_bars(const BarChart& c) {
  size_t longest = c.category_title.size();
  for (const std::string& name : c.categories) longest = std::max(longest, name.size());
  bool texts = false;
  for (const auto& row : c.bars) {
    for (const Bar& b : row) texts = texts || !b.text.empty();
  }
  const double left = std::clamp(kCharWidth * static_cast<double>(longest) + 18, 70.0, 340.0);
  const double right = c.width - (texts ? 150.0 : 30.0);
  const double top = top_margin(c.subtitle) + 14;  // the category title above the rows
  const size_t per_row = std::max<size_t>(c.series.size(), 1);
  const double bar_h = 12, row_h = static_cast<double>(per_row) * (bar_h + 2) + 10;
  const double bottom =
      top + std::max<double>(row_h * static_cast<double>(c.categories.size()), row_h);
  const int height = static_cast<int>(std::ceil(bottom + (!c.series.empty() ? 66.0 : 46.0)));

  Range r;
  r.add(c.origin);
  for (const auto& row : c.bars) {
    for (const Bar& b : row) {
      if (b.missing) continue;
      r.add(b.value);
      if (b.low) r.add(*b.low);
      if (b.high) r.add(*b.high);
    }
  }
  if (c.ref) r.add(*c.ref);
  Axis axis = c.value;
  axis.log = false;
  const Scale s = scale_for(axis, r, left, right);

  std::string out = dashboard::svg_start(c.id, "picture", c.title, c.width, height);
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>";
  out += title_block(c.title, c.subtitle, c.width);
  out += "<text class=\"axis-title x\" x=\"" + svg_num((left + right) / 2) + "\" y=\"" +
         svg_num(bottom + 34) + "\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\">" +
         escape_markup(c.value.title) + "</text>";
  out += "<text class=\"axis-title y\" x=\"" + svg_num(left - 6) + "\" y=\"" + svg_num(top - 8) +
         "\" text-anchor=\"end\" font-size=\"12\" fill=\"#333\">" +
         escape_markup(c.category_title) + "</text>";
  if (c.categories.empty()) {
    out += frame(left, right, top, bottom);
    out += "<text class=\"empty\" x=\"" + svg_num((left + right) / 2) + "\" y=\"" +
           svg_num((top + bottom) / 2 + 4) + "\" text-anchor=\"middle\">" +
           escape_markup(c.empty_text) + "</text></svg>";
    return out;
  }
  for (const Tick& t : ticks_of(s)) {
    const std::string x = svg_num(s(t.value));
    out += "<line x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + svg_num(top) + "\" y2=\"" +
           svg_num(bottom) + "\" stroke=\"" + kGridColor + "\"/><text class=\"x-tick\" x=\"" + x +
           "\" y=\"" + svg_num(bottom + 15) + "\" text-anchor=\"middle\">" + t.label + "</text>";
  }
  const double x0 = s(std::clamp(c.origin, s.lo, s.hi));
  for (size_t i = 0; i < c.categories.size(); ++i) {
    const double row_top = top + row_h * static_cast<double>(i) + 5;
    out += "<text class=\"category\" x=\"" + svg_num(left - 6) + "\" y=\"" +
           svg_num(row_top + row_h / 2 - 1) + "\" text-anchor=\"end\">" +
           escape_markup(c.categories[i]) + "</text>";
    for (size_t k = 0; i < c.bars.size() && k < c.bars[i].size(); ++k) {
      const Bar& b = c.bars[i][k];
      const double y = row_top + static_cast<double>(k) * (bar_h + 2);
      const std::string color = k < c.series.size() ? c.series[k].color : dashboard::kLineColor;
      double text_x = x0;
      if (!b.missing) {
        const double x1 = s(std::clamp(b.value, s.lo, s.hi));
        out += "<rect class=\"bar\" x=\"" + svg_num(std::min(x0, x1)) + "\" y=\"" + svg_num(y) +
               "\" width=\"" + svg_num(std::max(std::fabs(x1 - x0), 1.0)) + "\" height=\"" +
               svg_num(bar_h) + "\" fill=\"" + color + "\" fill-opacity=\"0.85\">" +
               tooltip_of(b.tooltip) + "</rect>";
        text_x = std::max(x0, x1);
        if (b.low && b.high) {
          const double lo = s(std::clamp(*b.low, s.lo, s.hi)),
                       hi = s(std::clamp(*b.high, s.lo, s.hi));
          const double cy = y + bar_h / 2;
          out += "<path class=\"interval\" d=\"M" + svg_num(lo) + " " + svg_num(cy) + " L" +
                 svg_num(hi) + " " + svg_num(cy) + " M" + svg_num(lo) + " " + svg_num(cy - 4) +
                 " L" + svg_num(lo) + " " + svg_num(cy + 4) + " M" + svg_num(hi) + " " +
                 svg_num(cy - 4) + " L" + svg_num(hi) + " " + svg_num(cy + 4) +
                 "\" stroke=\"#222\" stroke-width=\"1.2\" fill=\"none\">" + tooltip_of(b.tooltip) +
                 "</path>";
          text_x = std::max(text_x, hi);
        }
      }
      if (!b.text.empty()) {
        out += "<text class=\"bar-text\" x=\"" + svg_num(text_x + 5) + "\" y=\"" +
               svg_num(y + bar_h - 2) + "\">" + escape_markup(b.text) + "</text>";
      }
    }
  }
  if (c.ref && s.drawable(*c.ref)) {
    const std::string x = svg_num(s(*c.ref));
    out += "<line class=\"ref\" x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + svg_num(top) +
           "\" y2=\"" + svg_num(bottom) + "\"" + line_attrs(kTextColor, 1.2, true) + "/>";
    if (!c.ref_label.empty()) {
      out += "<text x=\"" + svg_num(s(*c.ref) + 4) + "\" y=\"" + svg_num(top - 8) + "\">" +
             escape_markup(c.ref_label) + "</text>";
    }
  }
  out += frame(left, right, top, bottom);
  if (!c.series.empty()) {
    std::vector<LegendEntry> legend;
    for (const BarSeries& s2 : c.series) legend.push_back({s2.name, s2.color, false});
    out += legend_svg(legend, left, bottom + 56);
  }
  return out + "</svg>";
}

std::string svg_file(const std::string& svg_element) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n" + svg_element + "\n";
}

void write_picture(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out.flush()) throw UserError(path + ": cannot write the picture");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw UserError(path + ": cannot write the picture");
  }
}

std::string beside(const std::string& path, const std::string& suffix) {
  std::filesystem::path p(path);
  p.replace_extension("");
  return p.string() + suffix;
}

}  // namespace cuvil::reports::pictures
