#include "tuner/tune_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "reports/dashboard/format.h"
#include "reports/dashboard/style.h"
#include "reports/markup.h"
#include "reports/pictures/plot.h"
#include "tuner/search_space.h"

namespace cuvil::tuner {

namespace {

namespace pictures = reports::pictures;
namespace dashboard = reports::dashboard;
using reports::escape_markup;

const char* const kImportanceSuffix = ".importance.svg";
const char* const kHistorySuffix = ".history.svg";
const char* const kSensitivitySuffix = ".sensitivity.svg";
const char* const kReportSuffix = ".report.html";

std::string fixed(double v, int decimals) {
  return dashboard::format_fixed(v, decimals);
}

bool has_fanova(const TuneReport& r, const std::string& param) {
  return r.fanova.is_object() && r.fanova.contains(param) && r.fanova[param].is_number();
}

}  // namespace

std::string importance_svg(const TuneReport& r) {
  pictures::BarChart c;
  c.id = "importance";
  c.title = "Parameter importance: " + r.suite + " (" +
            std::to_string(r.importance ? r.importance->trials : 0) + " complete trials)";
  c.value.title = "share of importance (%)";
  c.value.include_zero = true;
  c.category_title = "parameter";
  c.empty_text = "no parameter ranked";
  const bool fanova = r.fanova.is_object() && !r.fanova.empty();
  c.series.push_back({"mean |SHAP| share, whisker p5-p95 over " +
                          std::to_string(r.importance ? r.importance->refits : 0) + " refits",
                      dashboard::kLineColor});
  if (fanova) c.series.push_back({"fANOVA share", dashboard::series_color(1)});
  c.subtitle = fanova ? "XGBoost on log latency, exact TreeSHAP; fANOVA from Optuna"
                      : "XGBoost on log latency, exact TreeSHAP; fANOVA " + r.fanova_note;
  if (!r.enough_trials) c.subtitle += "; WARNING: too few trials to rank reliably";
  if (r.importance) {
    double total = 0;
    for (const ParamImportance& p : r.importance->ranking) total += p.mean_abs_shap;
    for (const ParamImportance& p : r.importance->ranking) {
      c.categories.push_back(p.name);
      std::vector<pictures::Bar> row;
      pictures::Bar shap;
      shap.value = 100 * p.share;
      if (total > 0) {
        shap.low = 100 * p.low / total;
        shap.high = 100 * p.high / total;
      }
      shap.tooltip = p.name + ": mean |SHAP| " + fixed(p.mean_abs_shap, 4) + " (" +
                     fixed(100 * p.share, 1) + "% of the total; p5-p95 " + fixed(p.low, 4) +
                     " .. " + fixed(p.high, 4) + "), rank " + std::to_string(p.rank) + " (p5-p95 " +
                     std::to_string(p.rank_low) + " .. " + std::to_string(p.rank_high) + ")";
      row.push_back(shap);
      if (fanova) {
        pictures::Bar fa;
        if (has_fanova(r, p.name)) {
          fa.value = 100 * r.fanova[p.name].get<double>();
          fa.tooltip = p.name + ": fANOVA " + fixed(r.fanova[p.name].get<double>(), 4);
        } else {
          fa.missing = true;
          fa.text = "no fANOVA value";
        }
        row.push_back(fa);
      }
      c.bars.push_back(std::move(row));
    }
  }
  return pictures::render_bars(c);
}

std::string history_svg(const TuneReport& r) {
  pictures::XyPlot p;
  p.id = "history";
  p.title = "Optimisation history: " + r.suite + " (study " + r.study + ")";
  p.subtitle = r.objective;
  p.x.title = "trial number";
  p.y.title = "objective (ms)";
  p.empty_text = "no trial with a value";
  const char* complete_color = dashboard::kLineColor;
  const char* pruned_color = dashboard::series_color(1);
  const char* failed_color = dashboard::kRegressionColor;
  const char* best_color = dashboard::kImprovementColor;

  std::vector<const TrialRecord*> trials;
  if (r.trials) {
    for (const TrialRecord& t : *r.trials) trials.push_back(&t);
  }
  std::stable_sort(trials.begin(), trials.end(), [](const TrialRecord* a, const TrialRecord* b) {
    return a->number < b->number;
  });
  double lowest = 0, highest = 0;
  for (const TrialRecord* t : trials) {
    if (!t->has_value || !(t->value > 0)) continue;
    lowest = lowest > 0 ? std::min(lowest, t->value) : t->value;
    highest = std::max(highest, t->value);
  }
  pictures::Line best;
  best.color = best_color;
  best.steps = true;
  best.css_class = "best-so-far";
  best.label = "best so far";
  double best_value = 0;
  size_t complete = 0, pruned = 0, failed = 0;
  for (const TrialRecord* t : trials) {
    pictures::Mark m;
    m.x = t->number;
    const std::string base = t->baseline ? " (the default configuration)" : "";
    if (t->state == "complete" && t->has_value) {
      ++complete;
      m.y = t->value;
      m.color = complete_color;
      m.shape = t->baseline ? pictures::Shape::kDiamond : pictures::Shape::kCircle;
      m.css_class = t->baseline ? "trial complete baseline" : "trial complete";
      m.tooltip = "trial " + std::to_string(t->number) + base + ": " + fixed(t->value, 4) + " ms";
      if (t->number == r.best_trial) m.tooltip += "\nthe best trial";
      if (best_value == 0 || t->value < best_value) best_value = t->value;
      best.points.emplace_back(t->number, best_value);
    } else if (t->state == "pruned") {
      ++pruned;
      m.y = t->has_value && t->value > 0 ? t->value : highest;
      m.color = pruned_color;
      m.shape = pictures::Shape::kRing;
      m.css_class = "trial pruned";
      m.tooltip = "trial " + std::to_string(t->number) + base + ": pruned" +
                  (t->has_value ? " at " + fixed(t->value, 4) + " ms" : "") +
                  (t->reason.empty() ? "" : "\n" + t->reason);
    } else {
      ++failed;
      // No value: drawn on the lowest line of the plot so the trial still shows.
      m.y = lowest > 0 ? lowest : 1;
      m.color = failed_color;
      m.shape = pictures::Shape::kCross;
      m.css_class = "trial failed";
      m.tooltip = "trial " + std::to_string(t->number) + base + ": " + t->state +
                  (t->reason.empty() ? "" : "\n" + t->reason);
    }
    if (m.y > 0) p.marks.push_back(std::move(m));
  }
  if (!best.points.empty() && !trials.empty() && trials.back()->number > best.points.back().first) {
    best.points.emplace_back(trials.back()->number, best_value);
  }
  if (complete == 0 && pruned == 0) p.marks.clear();  // only failures: nothing to scale by
  if (!best.points.empty()) p.lines.push_back(std::move(best));
  p.legend.push_back({"complete (" + std::to_string(complete) + ")", complete_color});
  p.legend.push_back({"pruned, at its last value (" + std::to_string(pruned) + ")", pruned_color});
  p.legend.push_back({"failed, no value (" + std::to_string(failed) + ")", failed_color});
  p.legend.push_back({"best so far", best_color, true});
  return pictures::render_xy(p);
}

std::string sensitivity_svg(const TuneReport& r) {
  pictures::BarChart c;
  c.id = "sensitivity";
  c.title = "Sensitivity around the " + r.written + " configuration: " + r.suite;
  c.subtitle =
      "one parameter moved one step, the rest held; measured side by side, whisker: 95% interval";
  c.value.title = "time of the neighbour / time of the written configuration (ratio)";
  c.category_title = "parameter: best \xe2\x86\x92 neighbour";
  c.origin = 1;
  c.ref = 1;
  c.ref_label = "1 = no change";
  c.series.push_back(
      {"neighbour time / written time, whisker: 95% interval", dashboard::kLineColor});
  c.empty_text = "no neighbour to measure";
  if (r.sensitivity) {
    for (const SensitivityRow& row : *r.sensitivity) {
      c.categories.push_back(row.neighbour.param + ": " + value_text(row.neighbour.from) + " -> " +
                             value_text(row.neighbour.to));
      pictures::Bar b;
      if (!row.failure.empty()) {
        b.missing = true;
        b.text = "failed: " + row.failure;
      } else {
        b.value = row.ratio.ratio;
        b.low = row.ratio.low;
        b.high = row.ratio.high;
        b.text = fixed(row.ratio.ratio, 3) + "x";
        b.tooltip = row.neighbour.param + " " + row.neighbour.move + ": time ratio " +
                    fixed(row.ratio.ratio, 3) + " (95% CI " + fixed(row.ratio.low, 3) + " .. " +
                    fixed(row.ratio.high, 3) + ", p " +
                    dashboard::format_p_value(row.ratio.p_value) + ")";
      }
      c.bars.push_back({b});
    }
  }
  return pictures::render_bars(c);
}

std::string study_report_html(const TuneReport& r) {
  const std::string stem = std::filesystem::path(r.output).stem().string();
  std::map<std::string, size_t> states;
  if (r.trials) {
    for (const TrialRecord& t : *r.trials) ++states[t.state];
  }
  std::string counts;
  for (const auto& [state, n] : states) {
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + escape_markup(state);
  }
  const std::string title = "cuvil-tune-gen study report: " + r.suite;
  std::string out = dashboard::html_page_start(title);
  out += "<h1>" + escape_markup(title) + "</h1><p class=\"meta\">Study <code>" +
         escape_markup(r.study) + "</code> on rungs " + escape_markup(r.rungs) + ": " + counts +
         " trial(s). Best trial " + std::to_string(r.best_trial) +
         (r.baseline_trial >= 0 ? ", default trial " + std::to_string(r.baseline_trial) : "") +
         "; wrote <a href=\"" + escape_markup(std::filesystem::path(r.output).filename().string()) +
         "\"><code>" + escape_markup(std::filesystem::path(r.output).filename().string()) +
         "</code></a> (" + escape_markup(r.written) + " configuration).</p>";
  if (!r.enough_trials && !r.reliability.empty()) {
    out += "<p class=\"note\">" + escape_markup(r.reliability) + "</p>";
  }
  const auto figure = [&](const std::string& svg, const std::string& suffix,
                          const std::string& caption) {
    const std::string file = stem + suffix;
    out += "<figure>" + svg + "<figcaption>" + escape_markup(caption) + " <a href=\"" +
           escape_markup(file) + "\">" + escape_markup(file) + "</a></figcaption></figure>";
  };
  figure(importance_svg(r), kImportanceSuffix,
         "Importance: each parameter's share of the model's mean |SHAP| (whisker: p5-p95 over "
         "the bootstrap refits), fANOVA beside it when the study was read.");
  figure(history_svg(r), kHistorySuffix,
         "History: every trial's objective in trial order and the best so far; pruned trials at "
         "their last value, failed trials on the bottom line.");
  if (r.sensitivity) {
    figure(sensitivity_svg(r), kSensitivitySuffix,
           "Sensitivity: each one-step neighbour measured side by side with the written "
           "configuration; above 1 the move makes it slower.");
  } else {
    out +=
        "<p class=\"none\">No sensitivity sweep (cuvil-tune-gen --sensitivity measures "
        "one).</p>";
  }
  return out + "</body></html>\n";
}

std::vector<std::string> write_tune_report(const TuneReport& r) {
  std::vector<std::string> written;
  const auto write = [&](const std::string& suffix, const std::string& text) {
    const std::string path = pictures::beside(r.output, suffix);
    pictures::write_picture(path, text);
    written.push_back(path);
  };
  write(kImportanceSuffix, pictures::svg_file(importance_svg(r)));
  write(kHistorySuffix, pictures::svg_file(history_svg(r)));
  if (r.sensitivity) write(kSensitivitySuffix, pictures::svg_file(sensitivity_svg(r)));
  write(kReportSuffix, study_report_html(r));
  return written;
}

}  // namespace cuvil::tuner
