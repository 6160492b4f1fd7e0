#include "reports/pictures/serve_curve.h"

#include <algorithm>
#include <cstdio>

#include "reports/dashboard/style.h"
#include "reports/pictures/plot.h"

namespace cuvil::reports::pictures {

namespace {

// Latencies past the knee grow with the queue: a log axis once they span this ratio.
constexpr double kLogLatencySpan = 30;

std::string printf_string(const char* format, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

}  // namespace

std::string load_latency_svg(const LoadLatencyCurve& curve) {
  std::vector<size_t> order(curve.steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return curve.steps[a].offered_qps < curve.steps[b].offered_qps;
  });
  const char* p50_color = dashboard::series_color(3);
  const char* p90_color = dashboard::series_color(1);
  const char* p99_color = dashboard::kLineColor;

  XyPlot p;
  p.id = "load-latency";
  p.title = curve.name + ": " + curve.latency + " vs offered load";
  p.subtitle = curve.note;
  if (curve.capacity_qps > 0) {
    p.subtitle += (p.subtitle.empty() ? "" : "; ") +
                  printf_string("calibrated capacity %.4g queries/s", curve.capacity_qps);
  }
  p.x.title = "offered load (queries/s)";
  p.x.include_zero = true;
  p.y.title = curve.latency + " (ms)";
  p.y.include_zero = true;
  p.empty_text = "no server steps";

  double lo = 0, hi = 0;
  Band low_band, high_band;
  low_band.color = p50_color;
  low_band.css_class = "p50-p90";
  high_band.color = p99_color;
  high_band.css_class = "p90-p99";
  Line p50, p90, p99;
  p50.color = p50_color;
  p50.label = "p50";
  p50.css_class = "p50";
  p90.color = p90_color;
  p90.label = "p90";
  p90.css_class = "p90";
  p99.color = p99_color;
  p99.label = "p99";
  p99.css_class = "p99";
  p99.width = 2.2;
  for (size_t i : order) {
    const LoadStep& s = curve.steps[i];
    low_band.x.push_back(s.offered_qps);
    low_band.low.push_back(s.p50_ms);
    low_band.high.push_back(s.p90_ms);
    high_band.x.push_back(s.offered_qps);
    high_band.low.push_back(s.p90_ms);
    high_band.high.push_back(s.p99_ms);
    p50.points.emplace_back(s.offered_qps, s.p50_ms);
    p90.points.emplace_back(s.offered_qps, s.p90_ms);
    p99.points.emplace_back(s.offered_qps, s.p99_ms);
    lo = lo > 0 ? std::min(lo, s.p50_ms) : s.p50_ms;
    hi = std::max(hi, s.p99_ms);
    Mark m;
    m.x = s.offered_qps;
    m.y = s.p99_ms;
    m.color = s.valid ? p99_color : dashboard::kRegressionColor;
    m.shape = s.valid ? Shape::kCircle : Shape::kRing;
    m.css_class = s.valid ? "step" : "step invalid";
    char tip[320];
    std::snprintf(tip, sizeof tip,
                  "offered %.4g queries/s (achieved %.4g), %lld queries\np50 %.3f ms, p90 %.3f "
                  "ms, p99 %.3f ms\n%s",
                  s.offered_qps, s.achieved_qps, static_cast<long long>(s.queries), s.p50_ms,
                  s.p90_ms, s.p99_ms, s.verdict.c_str());
    m.tooltip = tip;
    p.marks.push_back(std::move(m));
  }
  if (lo > 0 && hi / lo > kLogLatencySpan) {
    p.y.log = true;
    p.y.include_zero = false;
    p.subtitle += (p.subtitle.empty() ? "" : "; ") + std::string("latency axis: log scale");
  }
  p.bands = {low_band, high_band};
  p.lines = {p50, p90, p99};
  if (curve.slo_ms > 0) {
    RefLine slo;
    slo.value = curve.slo_ms;
    slo.color = dashboard::kRegressionColor;
    slo.label = printf_string("SLO: p99 <= %g ms", curve.slo_ms);
    slo.css_class = "slo";
    slo.tooltip = slo.label;
    p.refs.push_back(slo);
  }
  if (curve.knee && *curve.knee < curve.steps.size()) {
    const LoadStep& k = curve.steps[*curve.knee];
    RefLine knee;
    knee.vertical = true;
    knee.value = k.offered_qps;
    knee.color = dashboard::kImprovementColor;
    knee.label = printf_string("knee %.4g queries/s", k.offered_qps);
    knee.css_class = "knee";
    knee.tooltip =
        printf_string("knee: the highest offered load whose p99 (%.3f ms) meets the SLO", k.p99_ms);
    p.refs.push_back(knee);
  }
  p.legend = {{"p50", p50_color, true}, {"p90", p90_color, true}, {"p99", p99_color, true}};
  const bool missed = std::any_of(curve.steps.begin(), curve.steps.end(),
                                  [](const LoadStep& s) { return !s.valid; });
  if (missed)
    p.legend.push_back({"red ring: a step that missed the target", dashboard::kRegressionColor});
  return render_xy(p);
}

}  // namespace cuvil::reports::pictures
