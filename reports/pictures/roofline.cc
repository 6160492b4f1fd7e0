#include "reports/pictures/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "reports/dashboard/style.h"
#include "reports/pictures/plot.h"

namespace cuvil::reports::pictures {

std::string roofline_svg(const Roofline& r) {
  XyPlot p;
  p.id = "roofline";
  p.title = "Roofline: " + r.name;
  p.x.title = "arithmetic intensity (FLOP/byte, log scale)";
  p.x.log = true;
  p.y.title = "achieved performance (GFLOP/s, log scale)";
  p.y.log = true;
  p.height = 460;
  p.empty_text = "no op with declared FLOPs and bytes";

  std::map<std::string, const char*> color_of;  // lowering -> colour, first seen first
  size_t skipped = 0;
  double lo_i = 0, hi_i = 0;
  for (const RooflineOp& op : r.ops) {
    if (!(op.flops > 0) || !(op.bytes > 0) || !(op.ns > 0)) {
      ++skipped;
      continue;
    }
    const std::string lowering = op.lowering.empty() ? "unknown" : op.lowering;
    auto it = color_of.find(lowering);
    if (it == color_of.end()) {
      it = color_of.emplace(lowering, dashboard::series_color(color_of.size())).first;
      p.legend.push_back({lowering, it->second, false});
    }
    Mark m;
    m.x = op.flops / op.bytes;
    m.y = op.flops / op.ns;
    m.color = it->second;
    std::string safe = lowering;  // a class name: no spaces or quotes
    for (char& c : safe) {
      if (c == ' ' || c == '"') c = '_';
    }
    m.css_class = "op lowering-" + safe;
    char tip[512];
    std::snprintf(tip, sizeof tip,
                  "%s %s (%s, kernel %s, %s)\n%.3g GFLOP/s at %.3g FLOP/byte, %.4g us per "
                  "iteration",
                  op.rung.c_str(), op.node.c_str(), op.op.c_str(), op.kernel.c_str(),
                  lowering.c_str(), m.y, m.x, op.ns * 1e-3);
    m.tooltip = tip;
    lo_i = lo_i > 0 ? std::min(lo_i, m.x) : m.x;
    hi_i = std::max(hi_i, m.x);
    p.marks.push_back(std::move(m));
  }
  char sub[320];
  std::snprintf(sub, sizeof sub, "roofs: this machine's measured %.4g GFLOP/s and %.4g GB/s%s%s",
                r.peak_gflops, r.peak_gbps, r.peak_note.empty() ? "" : ", ", r.peak_note.c_str());
  p.subtitle = r.peak_gflops > 0 || r.peak_gbps > 0 ? sub : "machine peak not measured: no roofs";
  for (const auto& [arithmetic, gflops] : r.precision_roofs) {
    char extra[80];
    std::snprintf(extra, sizeof extra, "; %s %.4g GFLOP/s (dashed)", arithmetic.c_str(), gflops);
    p.subtitle += extra;
  }
  if (skipped > 0) p.subtitle += "; " + std::to_string(skipped) + " op(s) without FLOPs not drawn";
  if (!p.marks.empty() && (r.peak_gflops > 0 || r.peak_gbps > 0)) {
    // The roofs over the x range the points need, and the ridge point where they meet.
    const double ridge = r.peak_gflops > 0 && r.peak_gbps > 0 ? r.peak_gflops / r.peak_gbps : 0;
    double x0 = std::pow(10.0, std::floor(std::log10(lo_i)));
    double x1 = std::pow(10.0, std::ceil(std::log10(hi_i)));
    if (ridge > 0) {
      x0 = std::min(x0, std::pow(10.0, std::floor(std::log10(ridge))));
      x1 = std::max(x1, std::pow(10.0, std::ceil(std::log10(ridge))));
    }
    if (!(x1 > x0)) x1 = x0 * 10;
    p.x.min = x0;
    p.x.max = x1;
    // min(compute, bandwidth x intensity) from x0 to x1, bending at the ridge.
    const auto roof_line = [&](double compute, const std::string& css_class,
                               const std::string& label) {
      const auto roof = [&](double i) {
        const double bw = r.peak_gbps > 0 ? r.peak_gbps * i : HUGE_VAL;
        return compute > 0 ? std::min(compute, bw) : bw;
      };
      const double bend = compute > 0 && r.peak_gbps > 0 ? compute / r.peak_gbps : 0;
      Line l;
      l.color = "#222";
      l.width = 2;
      l.css_class = css_class;
      l.points.emplace_back(x0, roof(x0));
      if (bend > x0 && bend < x1) l.points.emplace_back(bend, roof(bend));
      l.points.emplace_back(x1, roof(x1));
      l.label = label;
      char tip[200];
      std::snprintf(tip, sizeof tip,
                    "min(%.4g GFLOP/s, %.4g GB/s x intensity); ridge at %.3g FLOP/byte", compute,
                    r.peak_gbps, bend);
      l.tooltip = tip;
      return l;
    };
    p.lines.push_back(roof_line(r.peak_gflops, "roof", "roof"));
    p.legend.push_back({"roof: min(compute peak, bandwidth x intensity)", "#222", true});
    for (const auto& [arithmetic, gflops] : r.precision_roofs) {
      Line l = roof_line(gflops, "roof " + arithmetic, arithmetic + " roof");
      l.dashed = true;
      p.lines.push_back(std::move(l));
      p.legend.push_back({arithmetic + " roof: the " + arithmetic + " dot-product peak, for " +
                              arithmetic + " kernels",
                          "#222", true});
    }
  }
  return render_xy(p);
}

}  // namespace cuvil::reports::pictures
