#include "reports/dashboard/style.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "reports/dashboard/format.h"

namespace cuvil::reports::dashboard {

namespace {

const char* const kSeriesColors[] = {kLineColor, "#ef6c00", "#6a1b9a", "#2e7d32",
                                     "#c62828",  "#00838f", "#8d6e63", "#546e7a"};

}  // namespace

const char* series_color(size_t index) {
  return kSeriesColors[index % (sizeof kSeriesColors / sizeof kSeriesColors[0])];
}

const char* const kPageStyle = R"css(
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1240px; padding: 0 1em; color: #222; }
.wide { overflow-x: auto; }
h1 { margin-bottom: 0.2em; }
.meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 6px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child, td.text { text-align: left; }
th { background: #f4f4f4; }
tr.regression td.direction, .verdict-slower { color: #c62828; font-weight: bold; }
tr.improvement td.direction, .verdict-faster { color: #2e7d32; font-weight: bold; }
.note { color: #8a6d00; font-size: 12px; }
.none { color: #666; font-style: italic; }
.notice { color: #8a6d00; }
.config-changed { color: #8e24aa; }
article.series { border-top: 1px solid #ccc; padding-top: 0.4em; margin-bottom: 1.2em; }
article.series h3 small { color: #666; font-weight: normal; }
.legend { color: #666; font-size: 12px; }
figure { margin: 1em 0 1.6em; }
figcaption { color: #666; font-size: 12px; }
)css";

std::string html_page_start(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<link rel=\"icon\" href=\"data:,\"><title>" +
         escape_markup(title) + "</title><style>" + kPageStyle + "</style></head><body>";
}

std::string svg_start(const std::string& id, const std::string& css_class, const std::string& title,
                      int width, int height) {
  const std::string w = std::to_string(width), h = std::to_string(height);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"" + escape_markup(css_class) +
         "\" id=\"" + escape_markup(id) + "\" width=\"" + w + "\" height=\"" + h +
         "\" viewBox=\"0 0 " + w + " " + h +
         "\" role=\"img\" font-family=\"sans-serif\" font-size=\"" + std::to_string(kFontSize) +
         "\" fill=\"" + kTextColor + "\"><title>" + escape_markup(title) + "</title>";
}

std::string svg_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  if (std::fabs(v) < step * 1e-6) v = 0;  // no "-0.0" from accumulated steps
  return format_fixed(v, std::min(decimals, 6));
}

}  // namespace cuvil::reports::dashboard
