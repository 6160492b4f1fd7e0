#include "reports/flame/flame_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "base/error.h"
#include "reports/flame/flame_svg_script.h"
#include "reports/markup.h"

namespace cuvil::reports::flame {

namespace {

constexpr double kHeaderHeight = 66;  // title, subtitle, buttons
constexpr double kFooterHeight = 30;  // the details line
constexpr double kCharWidth = 6.6;    // 11px sans-serif, on average
constexpr double kUnchangedBelow = 0.01;
constexpr double kSaturatesAt = 0.5;

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string px(double value) {
  return printf_string("%.3f", value);
}

// A stable warm colour per name (the same function is the same colour in every graph).
std::string hot_fill(const std::string& name) {
  const size_t h = std::hash<std::string>{}(name);
  const double a = static_cast<double>(h & 0xff) / 255.0;
  const double b = static_cast<double>((h >> 8) & 0xff) / 255.0;
  const int r = 205 + static_cast<int>(50 * a);
  const int g = static_cast<int>(80 + 150 * b);
  const int bl = static_cast<int>(40 + 40 * a * b);
  return "rgb(" + std::to_string(r) + "," + std::to_string(g) + "," + std::to_string(bl) + ")";
}

std::string label_for(const std::string& name, double width) {
  const double fit = std::floor((width - 6) / kCharWidth);
  if (fit < 3) return "";
  if (static_cast<double>(name.size()) <= fit) return name;
  return name.substr(0, static_cast<size_t>(fit) - 2) + "..";
}

std::string percent(double part, double whole) {
  return printf_string("%.2f%%", whole > 0 ? 100.0 * part / whole : 0.0);
}

std::string signed_percent(double change) {
  return printf_string("%+.1f%%", 100.0 * change);
}

std::string tooltip(const FrameNode& node, const FrameTree& tree) {
  const std::string& unit = tree.unit();
  std::string text = node.name + "\n" + format_weight(node.total, unit) + " (" +
                     percent(node.total, tree.total()) + " of " +
                     format_weight(tree.total(), unit) + ")";
  if (node.self > 0 && node.self != node.total) {
    text += ", self " + format_weight(node.self, unit);
  }
  if (!tree.differential()) return text;
  if (!node.in_base) return text + "\nnot in the base run";
  text += "\nbase " + format_weight(node.base_total, tree.base_unit()) + ", new " +
          format_weight(node.total, unit);
  if (node.base_total > 0) {
    text += ", change " + signed_percent((node.total - node.base_total) / node.base_total);
  }
  return text;
}

class SvgWriter {
 public:
  SvgWriter(const FrameTree& tree, const SvgOptions& o) : tree_(tree), o_(o) {
    plot_w_ = svg_plot_width(o);
    height_ =
        kHeaderHeight + static_cast<double>(tree.depth() + 1) * o.frame_height + kFooterHeight;
  }

  std::string write() {
    out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
    out_ += "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
            std::to_string(o_.width) + "\" height=\"" + px(height_) + "\" viewBox=\"0 0 " +
            std::to_string(o_.width) + " " + px(height_) + "\" data-plot-x=\"" + px(kSvgPadX) +
            "\" data-plot-w=\"" + px(plot_w_) + "\" data-char-w=\"" + px(kCharWidth) +
            "\" data-total=\"" + printf_string("%.17g", tree_.total()) + "\" data-unit=\"" +
            escape_markup(tree_.unit()) + "\" data-differential=\"" +
            (tree_.differential() ? "true" : "false") + "\" onload=\"init()\">\n";
    out_ += "<style type=\"text/css\"><![CDATA[" + std::string(kFlameSvgStyle) + "]]></style>\n";
    out_ += "<script type=\"text/ecmascript\"><![CDATA[" + std::string(kFlameSvgScript) +
            "]]></script>\n";
    out_ += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(o_.width) + "\" height=\"" +
            px(height_) + "\" fill=\"#f8f8f4\"/>\n";
    text("title", o_.width / 2.0, 24, o_.title);
    if (!o_.subtitle.empty()) text("subtitle", o_.width / 2.0, 42, o_.subtitle);
    text("unzoom", kSvgPadX, 24, "Reset Zoom", "button hide");
    text("search", o_.width - kSvgPadX - 90, 24, "Search", "button");
    text("matched", o_.width - kSvgPadX, height_ - 10, " ");
    text("details", kSvgPadX, height_ - 10, " ");
    if (tree_.differential()) legend();
    out_ += "<g id=\"frames\">\n";
    frames();
    out_ += "</g>\n</svg>\n";
    return std::move(out_);
  }

 private:
  void text(const char* id, double x, double y, const std::string& content,
            const char* css_class = nullptr) {
    out_ += "<text id=\"" + std::string(id) + "\"";
    if (css_class) out_ += " class=\"" + std::string(css_class) + "\"";
    out_ += " x=\"" + px(x) + "\" y=\"" + px(y) + "\">" + escape_markup(content) + "</text>\n";
  }

  void legend() {
    std::string line = "red: grew, blue: shrank, grey: within 1%; widths from the new run";
    if (tree_.total_only_in_base() > 0) {
      line += "; frames only in the base run: " +
              format_weight(tree_.total_only_in_base(), tree_.base_unit());
    }
    text("legend", kSvgPadX, 58, line);
  }

  std::string fill(const FrameNode& node) const {
    if (tree_.differential()) return diff_colour(node.base_total, node.total, node.in_base).fill();
    return hot_fill(node.name);
  }

  // Every frame, parents before children, from an explicit stack: trees may be thousands of
  // frames deep.
  void frames() {
    struct Pending {
      const FrameNode* node;
      size_t level;
      double x;
    };
    std::vector<Pending> pending{{&tree_.root(), 0, kSvgPadX}};
    while (!pending.empty()) {
      const Pending p = pending.back();
      pending.pop_back();
      if (!frame(*p.node, p.level, p.x)) continue;
      // Children start at the parent's left edge, in order; positions come from cumulative
      // weights so rounding never accumulates across siblings. Pushed in order, then reversed,
      // so they come off the stack in order.
      const size_t first = pending.size();
      double before = 0;
      for (const auto& c : p.node->children) {
        pending.push_back({c.get(), p.level + 1, p.x + before / tree_.total() * plot_w_});
        before += c->total;
      }
      std::reverse(pending.begin() + static_cast<std::ptrdiff_t>(first), pending.end());
    }
  }

  // Writes one frame; false when it is too narrow to draw (and so is everything above it).
  bool frame(const FrameNode& node, size_t level, double x) {
    const double width = node.total / tree_.total() * plot_w_;
    if (width < o_.min_frame_px) return false;
    const double y = height_ - kFooterHeight - static_cast<double>(level + 1) * o_.frame_height;
    out_ += "<g class=\"f\" data-name=\"" + escape_markup(node.name) + "\" data-total=\"" +
            printf_string("%.17g", node.total) + "\" data-self=\"" +
            printf_string("%.17g", node.self) + "\"";
    if (tree_.differential()) {
      out_ += " data-base-total=\"" + printf_string("%.17g", node.base_total) +
              "\" data-in-base=\"" + (node.in_base ? "true" : "false") + "\"";
    }
    out_ += "><title>" + escape_markup(tooltip(node, tree_)) + "</title><rect x=\"" + px(x) +
            "\" y=\"" + px(y) + "\" width=\"" + px(width) + "\" height=\"" +
            std::to_string(o_.frame_height - 1) + "\" rx=\"2\" fill=\"" + fill(node) +
            "\"/><text x=\"" + px(x + 3) + "\" y=\"" + px(y + o_.frame_height - 4.5) + "\">" +
            escape_markup(label_for(node.name, width)) + "</text></g>\n";
    return true;
  }

  const FrameTree& tree_;
  const SvgOptions& o_;
  double plot_w_ = 0;
  double height_ = 0;
  std::string out_;
};

}  // namespace

std::string DiffColour::fill() const {
  return "rgb(" + std::to_string(r) + "," + std::to_string(g) + "," + std::to_string(b) + ")";
}

DiffColour diff_colour(double base_total, double new_total, bool in_base) {
  DiffColour c;
  if (!in_base || (base_total <= 0 && new_total > 0)) {
    c.change = Change::added;
    c.r = 255, c.g = 60, c.b = 60;
    return c;
  }
  const double change = base_total > 0 ? (new_total - base_total) / base_total : 0;
  if (std::fabs(change) < kUnchangedBelow) {
    c.r = c.g = c.b = 215;
    return c;
  }
  const double s = std::min(1.0, std::fabs(change) / kSaturatesAt);
  const int pale = static_cast<int>(std::lround(225 - 165 * s));
  if (change > 0) {
    c.change = Change::grown;
    c.r = 255, c.g = pale, c.b = pale;
  } else {
    c.change = Change::shrunk;
    c.r = pale, c.g = pale, c.b = 255;
  }
  return c;
}

std::string format_weight(double weight, const std::string& unit) {
  if (unit != "nanoseconds") {
    return printf_string("%.0f", weight) + (unit.empty() ? "" : " " + unit);
  }
  const double a = std::fabs(weight);
  if (a >= 1e9) return printf_string("%.3g s", weight / 1e9);
  if (a >= 1e6) return printf_string("%.3g ms", weight / 1e6);
  if (a >= 1e3) return printf_string("%.3g us", weight / 1e3);
  return printf_string("%.3g ns", weight);
}

std::string flame_svg(const FrameTree& tree, const SvgOptions& options) {
  if (!(tree.total() > 0)) throw UserError("nothing to draw: every frame weighs 0");
  if (options.width < 100 || options.frame_height < 4) {
    throw UserError("flame graph width must be >= 100 and frame height >= 4");
  }
  return SvgWriter(tree, options).write();
}

}  // namespace cuvil::reports::flame
