#include "reports/pictures/baseline_bars.h"

#include <cstdio>

#include "reports/dashboard/style.h"
#include "reports/pictures/plot.h"

namespace cuvil::reports::pictures {

std::string baseline_bars_svg(const BaselineChart& c) {
  BarChart b;
  b.id = "vs-baseline";
  b.title = "cuvil vs " + c.framework + ": median latency per rung";
  const std::string legend =
      "whiskers: the medians' 95% intervals; speed-up: its median / cuvil's (above 1: cuvil is "
      "faster)";
  b.subtitle = c.details.empty() ? legend : c.details + "; " + legend;
  b.value.title = "median latency (ms)";
  b.value.include_zero = true;
  b.category_title = "rung";
  b.empty_text = "no rung measured";
  for (size_t i = 0; i < c.variants.size(); ++i) {
    b.series.push_back({c.variants[i], dashboard::series_color(i)});
  }
  for (const BaselineRung& r : c.rungs) {
    b.categories.push_back(r.name);
    const BaselineBar* ours = r.bars.empty() ? nullptr : &r.bars.front();
    std::vector<Bar> row;
    for (const BaselineBar& v : r.bars) {
      Bar bar;
      if (!v.measured) {
        bar.missing = true;
        bar.text = v.variant + ": not measured" + (v.why_not.empty() ? "" : " (" + v.why_not + ")");
        row.push_back(bar);
        continue;
      }
      bar.value = v.median_ms;
      bar.low = v.low_ms;
      bar.high = v.high_ms;
      char text[96];
      if (&v != ours && ours && ours->measured && ours->median_ms > 0) {
        std::snprintf(text, sizeof text, "%.3f ms, speed-up %.2fx", v.median_ms,
                      v.median_ms / ours->median_ms);
      } else {
        std::snprintf(text, sizeof text, "%.3f ms", v.median_ms);
      }
      bar.text = text;
      char tip[200];
      std::snprintf(tip, sizeof tip, "%s %s: median %.4f ms (95%% interval %.4f .. %.4f ms)",
                    r.name.c_str(), v.variant.c_str(), v.median_ms, v.low_ms, v.high_ms);
      bar.tooltip = tip;
      row.push_back(bar);
    }
    b.bars.push_back(std::move(row));
  }
  return render_bars(b);
}

}  // namespace cuvil::reports::pictures
