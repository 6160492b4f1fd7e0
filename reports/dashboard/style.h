// The look the dashboard and the pictures (reports/pictures/) share: colours, the SVG font, the
// page CSS and the helpers that write axis ticks, so every report reads as one family.
#pragma once

#include <string>

namespace cuvil::reports::dashboard {

inline constexpr const char* kLineColor = "#1f6fb4";
inline constexpr const char* kRegressionColor = "#c62828";
inline constexpr const char* kImprovementColor = "#2e7d32";
inline constexpr const char* kConfigColor = "#8e24aa";  // config changes
inline constexpr const char* kGridColor = "#e3e3e3";
inline constexpr const char* kTextColor = "#555";
inline constexpr const char* kFrameColor = "#999";
inline constexpr int kFontSize = 11;

// Colours of series after the first (kLineColor), in order; `index` wraps around.
const char* series_color(size_t index);

// The CSS of index.html and of every HTML report.
extern const char* const kPageStyle;

// "<!DOCTYPE html>...<body>": a page with kPageStyle, an empty icon (no request for
// favicon.ico) and `title` in the head; the caller closes it with "</body></html>\n".
std::string html_page_start(const std::string& title);

// An <svg> start tag (the SVG namespace, the font, the text colour; role img) followed by its
// <title>; no XML prolog, so it is valid inline in HTML. `css_class` names the kind of picture.
std::string svg_start(const std::string& id, const std::string& css_class, const std::string& title,
                      int width, int height);

// A coordinate for SVG attributes: one decimal.
std::string svg_num(double v);

// 1, 2 or 5 times a power of ten, the smallest at least `raw` (> 0).
double nice_step(double raw);
// A tick value with as many decimals as the step needs.
std::string tick_label(double v, double step);

}  // namespace cuvil::reports::dashboard
