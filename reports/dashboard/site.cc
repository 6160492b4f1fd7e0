#include "reports/dashboard/site.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "reports/dashboard/config_diff.h"
#include "reports/dashboard/flame_links.h"
#include "reports/dashboard/format.h"
#include "reports/dashboard/style.h"
#include "reports/dashboard/svg_chart.h"

namespace cuvil::reports::dashboard {

namespace {

namespace fs = std::filesystem;

constexpr size_t kDateChars = 10;  // "2024-05-01" of an ISO date

std::string date_part(const std::string& date) {
  return date.substr(0, kDateChars);
}

std::string machine_label(const std::string& host, const std::string& cpu_model) {
  return cpu_model.empty() ? host : host + " (" + cpu_model + ")";
}

std::string percent_or_dash(double pct) {
  return pct > 0 ? format_fixed(pct, 1) + "%" : "-";
}

// Rates are 0 when the run declared no work: a dash, not a measured zero.
std::string rate_or_dash(double rate, int decimals) {
  return rate > 0 ? format_fixed(rate, decimals) : "-";
}

std::string cell(const std::string& text, const std::string& cls = "") {
  return (cls.empty() ? "<td>" : "<td class=\"" + cls + "\">") + text + "</td>";
}

std::string flame_cell(const std::string& link) {
  return link.empty()
             ? cell("-")
             : cell("<a class=\"flame\" href=\"" + escape_markup(link) + "\">flame graph</a>");
}

std::string series_link(const SeriesReport& s) {
  return "<a href=\"#" + s.history.key() + "\">" + escape_markup(s.history.name) + "</a>";
}

std::string config_label(const std::string& hash) {
  return hash.empty() ? "not recorded" : hash;
}

// "config changed (OLD → NEW): gemm-tiling.mc: 192 → 256" for a point whose config differs
// from the one before it.
std::string config_change_text(const HistoryPoint& p) {
  std::string t = "config changed (" + p.previous_config_hash + " \u2192 " + p.config_hash + ")";
  return p.config_changes.empty() ? t + ": no parameter differs in the stored files"
                                  : t + ": " + join_changes(p.config_changes);
}

// What came in with the step into point `index`: the config change, the commits, both, or
// neither (the machine or the noise). Plain text; commits as a range.
std::string step_cause(const BenchmarkHistory& h, size_t index) {
  const HistoryPoint& good = h.points[index - 1];
  const HistoryPoint& bad = h.points[index];
  const bool commits = good.commit != bad.commit;
  const std::string range = short_commit(good.commit) + ".." + short_commit(bad.commit);
  if (bad.config_changed) return config_change_text(bad) + (commits ? "; commits " + range : "");
  if (commits) return "commits " + range;
  return "same commit and config (" + short_commit(bad.commit) + ", " +
         config_label(bad.config_hash) + ")";
}

// The same for the change-point table: HTML, the commit range in <code>.
std::string step_cause_cell(const BenchmarkHistory& h, size_t index) {
  const HistoryPoint& good = h.points[index - 1];
  const HistoryPoint& bad = h.points[index];
  const std::string range =
      "<code>" + escape_markup(short_commit(good.commit) + ".." + short_commit(bad.commit)) +
      "</code>";
  if (bad.config_changed) {
    return "<span class=\"config-changed\">" + escape_markup(config_change_text(bad)) + "</span>" +
           (good.commit != bad.commit ? "; commits " + range : "");
  }
  if (good.commit != bad.commit) return range;
  return "same commit and config " + range;
}

std::string point_tooltip(const HistoryPoint& p, const std::string& flame_link) {
  std::string t = "run " + std::to_string(p.run_id) + ", " + p.date + "\ncommit " +
                  short_commit(p.commit) + "\nmedian " + format_time(p.median_ns) + " (p" +
                  format_fixed(kSpreadLowPercent, 0) + " " + format_time(p.low_ns) + " .. p" +
                  format_fixed(kSpreadHighPercent, 0) + " " + format_time(p.high_ns) + ", " +
                  std::to_string(p.samples) + " samples)";
  if (p.gflops > 0) {
    t += "\n" + format_fixed(p.gflops, 1) + " GFLOP/s (" + percent_or_dash(p.pct_peak_flops) +
         " of peak)";
  }
  if (p.gbps > 0) t += ", " + format_fixed(p.gbps, 2) + " GB/s";
  t += "\nmachine " + machine_label(p.host, p.cpu_model);
  t += "\nconfig " + config_label(p.config_hash);
  if (p.config_changed) t += "\n" + config_change_text(p);
  if (p.noisy) t += "\nNOISY measurement";
  if (!flame_link.empty()) t += "\nclick: flame graph";
  return t;
}

std::string change_tooltip(const BenchmarkHistory& h, const ChangePoint& c) {
  const HistoryPoint& good = h.points[c.index - 1];
  const HistoryPoint& bad = h.points[c.index];
  return std::string(direction_name(c.direction)) + " of " + format_fixed(c.change_pct, 1, true) +
         "%: " + format_time(c.before) + " -> " + format_time(c.after) + "\n" +
         step_cause(h, c.index) + "\nruns " + std::to_string(good.run_id) + ".." +
         std::to_string(bad.run_id) + ", " + date_part(good.date) + " .. " + date_part(bad.date) +
         ", p " + format_p_value(c.p_value);
}

// The x labels of a history's points (under each: the commit): the date when that tells every
// run apart, else the day and time, to the second if need be, else the run id.
std::vector<std::string> x_labels(const BenchmarkHistory& h) {
  const std::vector<std::function<std::string(const HistoryPoint&)>> ways = {
      [](const HistoryPoint& p) { return date_part(p.date); },
      [](const HistoryPoint& p) { return p.date.substr(5, 5) + " " + p.date.substr(11, 5); },
      [](const HistoryPoint& p) { return p.date.substr(5, 5) + " " + p.date.substr(11, 8); },
  };
  for (const auto& way : ways) {
    std::vector<std::string> labels;
    std::set<std::string> seen;
    for (const HistoryPoint& p : h.points) {
      labels.push_back(p.date.size() >= 19 ? way(p) : date_part(p.date));
      seen.insert(labels.back() + "\n" + p.commit);
    }
    if (seen.size() == h.points.size()) return labels;
  }
  std::vector<std::string> labels;
  for (const HistoryPoint& p : h.points) labels.push_back("run " + std::to_string(p.run_id));
  return labels;
}

LatencyChart chart_of(const SeriesReport& s) {
  const BenchmarkHistory& h = s.history;
  double typical = 0;
  for (const HistoryPoint& p : h.points) typical = std::max(typical, p.median_ns);
  const TimeUnit unit = time_unit_for(typical);
  LatencyChart chart;
  chart.id = "chart-" + h.key();
  chart.title = h.name + " latency per run (" + unit.name + ")";
  chart.unit = unit.name;
  const std::vector<std::string> labels = x_labels(h);
  for (size_t i = 0; i < h.points.size(); ++i) {
    const HistoryPoint& p = h.points[i];
    ChartPoint c;
    c.value = p.median_ns / unit.ns_per_unit;
    c.low = p.low_ns / unit.ns_per_unit;
    c.high = p.high_ns / unit.ns_per_unit;
    c.x_label = labels[i];
    c.x_sublabel = p.commit.empty() ? "-" : p.commit.substr(0, 7);
    c.href = i < s.flame_links.size() ? s.flame_links[i] : "";
    c.tooltip = point_tooltip(p, c.href);
    c.hollow = p.noisy;
    chart.points.push_back(std::move(c));
  }
  for (const ChangePoint& cp : s.change_points) {
    chart.markers.push_back({cp.index, cp.direction == ChangeDirection::kRegression,
                             format_fixed(cp.change_pct, 1, true) + "%" +
                                 (h.points[cp.index].config_changed ? " config" : ""),
                             change_tooltip(h, cp)});
  }
  for (size_t i = 0; i < h.points.size(); ++i) {
    if (h.points[i].config_changed)
      chart.config_markers.push_back({i, config_change_text(h.points[i])});
  }
  return chart;
}

// What the page says for a history too short for change points.
std::string too_short_text(const SeriesReport& s) {
  if (s.min_runs_for_change_points == 0) {
    return "no history is long enough for change points: the permutation test cannot reach this "
           "significance";
  }
  return "history too short for change points (need " +
         std::to_string(s.min_runs_for_change_points) + ", has " +
         std::to_string(s.history.points.size()) + " runs)";
}

// The histories too short for change points, named, so their silence is not read as "no change".
std::string too_short_paragraph(const std::vector<SeriesReport>& series) {
  std::string names;
  size_t n = 0, need = 0;
  for (const SeriesReport& s : series) {
    if (!s.too_short_for_change_points) continue;
    names += std::string(n++ ? ", " : "") + series_link(s) + " (" +
             std::to_string(s.history.points.size()) + " runs)";
    need = s.min_runs_for_change_points;
  }
  if (n == 0) return {};
  const std::string why = need == 0 ? "the permutation test cannot reach this significance"
                                    : "need " + std::to_string(need) + " runs";
  return "<p class=\"notice too-short\">" + std::to_string(n) + " of " +
         std::to_string(series.size()) + " histories too short for change points (" + why +
         "): " + names + ".</p>";
}

struct ListedChange {
  const SeriesReport* series;
  const ChangePoint* change;
};

std::string change_points_section(const std::vector<SeriesReport>& series) {
  std::vector<ListedChange> all;
  for (const SeriesReport& s : series) {
    for (const ChangePoint& c : s.change_points) all.push_back({&s, &c});
  }
  // Newest first: the one a reader must look at this morning is at the top.
  std::stable_sort(all.begin(), all.end(), [](const ListedChange& a, const ListedChange& b) {
    return a.series->history.points[a.change->index].run_id >
           b.series->history.points[b.change->index].run_id;
  });
  std::string out = "<section id=\"change-points\"><h2>Change points</h2>";
  const std::string too_short = too_short_paragraph(series);
  if (all.empty()) {
    size_t long_enough = 0;
    for (const SeriesReport& s : series) long_enough += !s.too_short_for_change_points;
    const std::string none =
        long_enough == 0 ? "No history is long enough for change points yet."
                         : "No change points in " + std::to_string(long_enough) + " histories" +
                               (too_short.empty() ? "" : " long enough to show them") + ".";
    return out + "<p class=\"none\">" + none + "</p>" + too_short + "</section>";
  }
  out +=
      "<table class=\"change-points\"><tr><th>benchmark</th><th>machine</th><th>direction</th>"
      "<th>change</th><th>before</th><th>after</th><th>came with</th><th>config</th>"
      "<th>runs</th><th>dates</th><th>p</th></tr>";
  for (const ListedChange& l : all) {
    const BenchmarkHistory& h = l.series->history;
    const ChangePoint& c = *l.change;
    const HistoryPoint& good = h.points[c.index - 1];
    const HistoryPoint& bad = h.points[c.index];
    const char* direction = direction_name(c.direction);
    out +=
        std::string("<tr class=\"") + direction + "\">" + cell(series_link(*l.series)) +
        cell(escape_markup(h.host), "text") + cell(direction, "direction text") +
        cell(format_fixed(c.change_pct, 1, true) + "%", "size") + cell(format_time(c.before)) +
        cell(format_time(c.after)) + cell(step_cause_cell(h, c.index), "cause text") +
        cell("<code>" +
                 escape_markup(bad.config_changed ? good.config_hash + " \u2192 " + bad.config_hash
                                                  : config_label(bad.config_hash)) +
                 "</code>",
             "config text") +
        cell(std::to_string(good.run_id) + ".." + std::to_string(bad.run_id)) +
        cell(escape_markup(date_part(good.date) + " .. " + date_part(bad.date))) +
        cell(format_p_value(c.p_value)) + "</tr>";
  }
  return out + "</table>" + too_short + "</section>";
}

// "runs 3, 4, 6 <code>c3..c6</code>": the runs a baseline pools.
std::string runs_cell(const BenchmarkHistory& h, const std::vector<size_t>& points) {
  if (points.empty()) return "-";
  std::string ids;
  for (size_t i = 0; i < points.size(); ++i) {
    ids += (i ? ", " : "") + std::to_string(h.points[points[i]].run_id);
  }
  const std::string& first = h.points[points.front()].commit;
  const std::string& last = h.points[points.back()].commit;
  const std::string commits =
      first == last ? short_commit(first) : short_commit(first) + ".." + short_commit(last);
  return (points.size() == 1 ? "run " : "runs ") + ids + " <code>" + escape_markup(commits) +
         "</code>";
}

std::string verdicts_section(const std::vector<SeriesReport>& series, size_t baseline_runs) {
  const std::string k = std::to_string(baseline_runs);
  std::string out =
      "<section id=\"latest\"><h2>Latest run against its baseline</h2>"
      "<p class=\"legend\">Baseline: the " +
      k +
      " runs before the latest of the same benchmark, target, thread count, machine and "
      "config hash, their samples pooled. Verdict: two-sided Mann-Whitney U test of the latest "
      "run's raw samples against the pooled ones (as <code>cuvil-bench compare</code>); a "
      "latest median inside the range of those " +
      k + " runs' medians stays <em>same</em>. Fewer than " + k +
      " such runs: <em>not enough data</em>.</p>"
      "<div class=\"wide\"><table "
      "class=\"verdicts\"><tr><th>benchmark</th><th>machine</th><th>config</th>"
      "<th>baseline: last " +
      k +
      " runs</th><th>latest</th><th>baseline median (pooled)</th><th>baseline range</th>"
      "<th>latest median</th><th>change</th><th>p</th><th>verdict</th><th>GFLOP/s</th>"
      "<th>% peak</th><th>GB/s</th><th>% bw</th><th>flame</th></tr>";
  for (const SeriesReport& s : series) {
    const BenchmarkHistory& h = s.history;
    if (h.points.empty()) continue;
    const HistoryPoint& last = h.points.back();
    const Baseline& b = s.baseline;
    out += "<tr>" + cell(series_link(s)) + cell(escape_markup(h.host), "text") +
           cell("<code>" + escape_markup(config_label(last.config_hash)) + "</code>", "text") +
           cell(runs_cell(h, b.points)) + cell(runs_cell(h, {h.points.size() - 1}));
    if (b.enough) {
      const BenchmarkComparison& c = b.comparison;
      const std::string verdict = verdict_name(b.verdict);
      std::string notes;
      if (b.within_range && b.verdict != c.verdict) {
        notes += " <span class=\"note\">(within the last " + k + " runs' range)</span>";
      }
      if (c.low_power) notes += " <span class=\"note\">(few samples)</span>";
      if (c.noisy) notes += " <span class=\"note\">(noisy)</span>";
      out += cell(format_time(c.old_median_ns)) +
             cell(format_time(b.low_median_ns) + " .. " + format_time(b.high_median_ns)) +
             cell(format_time(c.new_median_ns)) + cell(format_fixed(c.change_pct, 2, true) + "%") +
             cell(format_p_value(c.test.p_value)) +
             cell(verdict + notes, "verdict verdict-" + verdict);
    } else {
      const std::string why = h.points.size() == 1 ? "first run"
                                                   : std::to_string(b.points.size()) + " of " + k +
                                                         " earlier runs with config " +
                                                         config_label(last.config_hash);
      out += cell("-") + cell("-") + cell(format_time(last.median_ns)) + cell("-") + cell("-") +
             cell("not enough data <span class=\"note\">(" + escape_markup(why) + ")</span>",
                  "verdict verdict-not-enough-data");
    }
    out += cell(rate_or_dash(last.gflops, 1)) + cell(percent_or_dash(last.pct_peak_flops)) +
           cell(rate_or_dash(last.gbps, 2)) + cell(percent_or_dash(last.pct_peak_bw)) +
           flame_cell(s.flame_links.empty() ? "" : s.flame_links.back()) + "</tr>";
  }
  return out + "</table></div></section>";
}

std::string runs_table(const SeriesReport& s) {
  const BenchmarkHistory& h = s.history;
  std::string out =
      "<details><summary>" + std::to_string(h.points.size()) +
      " run(s)</summary><div class=\"wide\"><table class=\"runs\"><tr><th>run</th><th>date</th>"
      "<th>commit</th><th>config</th><th>machine</th><th>median</th><th>p" +
      format_fixed(kSpreadLowPercent, 0) + "</th><th>p" + format_fixed(kSpreadHighPercent, 0) +
      "</th><th>samples</th><th>GFLOP/s</th><th>% peak</th><th>GB/s</th>"
      "<th>% bw</th><th>flame</th></tr>";
  for (size_t i = h.points.size(); i-- > 0;) {
    const HistoryPoint& p = h.points[i];
    out += "<tr>" + cell(std::to_string(p.run_id)) + cell(escape_markup(p.date), "text") +
           cell("<code>" + escape_markup(short_commit(p.commit)) + "</code>", "text") +
           cell("<code>" + escape_markup(config_label(p.config_hash)) + "</code>" +
                    (p.config_changed ? " <span class=\"config-changed\">" +
                                            escape_markup(config_change_text(p)) + "</span>"
                                      : ""),
                "text") +
           cell(escape_markup(machine_label(p.host, p.cpu_model)), "text") +
           cell(format_time(p.median_ns) + (p.noisy ? " <span class=\"note\">noisy</span>" : "")) +
           cell(format_time(p.low_ns)) + cell(format_time(p.high_ns)) +
           cell(std::to_string(p.samples)) + cell(rate_or_dash(p.gflops, 1)) +
           cell(percent_or_dash(p.pct_peak_flops)) + cell(rate_or_dash(p.gbps, 2)) +
           cell(percent_or_dash(p.pct_peak_bw)) +
           flame_cell(i < s.flame_links.size() ? s.flame_links[i] : "") + "</tr>";
  }
  return out + "</table></div></details>";
}

std::string suites_sections(const std::vector<SeriesReport>& series) {
  std::string out;
  std::string current_suite;
  for (const SeriesReport& s : series) {
    const BenchmarkHistory& h = s.history;
    if (h.suite != current_suite || out.empty()) {
      if (!out.empty()) out += "</section>";
      current_suite = h.suite;
      out += "<section class=\"suite\" id=\"suite-" + escape_markup(h.suite) + "\"><h2>" +
             escape_markup(h.suite) + "</h2>";
    }
    out += "<article class=\"series\" id=\"" + h.key() + "\"><h3>" + escape_markup(h.name) +
           " <small>" + escape_markup(h.target) + ", " + std::to_string(h.threads) +
           " thread(s), " + escape_markup(machine_label(h.host, h.cpu_model)) + "</small></h3>";
    if (s.too_short_for_change_points) {
      out += "<p class=\"notice too-short\">" + escape_markup(too_short_text(s)) + "</p>";
    }
    out += render_latency_chart(chart_of(s));
    out += runs_table(s) + "</article>";
  }
  if (!out.empty()) out += "</section>";
  return out;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out.flush()) throw UserError(tmp.string() + ": cannot write");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw UserError(path.string() + ": cannot write: " + ec.message());
}

}  // namespace

Baseline baseline_of(const BenchmarkHistory& history, size_t baseline_runs,
                     const CompareOptions& options,
                     const std::function<std::vector<double>(size_t)>& samples_of) {
  Baseline b;
  if (history.points.empty()) return b;
  const size_t latest = history.points.size() - 1;
  const HistoryPoint& last = history.points[latest];
  for (size_t i = latest; i-- > 0 && b.points.size() < baseline_runs;) {
    if (history.points[i].config_hash == last.config_hash) b.points.push_back(i);
  }
  std::reverse(b.points.begin(), b.points.end());
  b.enough = baseline_runs > 0 && b.points.size() == baseline_runs;
  if (!b.enough) return b;
  BenchmarkSamples pooled, newest;
  pooled.name = newest.name = history.name;
  b.low_median_ns = b.high_median_ns = history.points[b.points.front()].median_ns;
  for (size_t i : b.points) {
    const std::vector<double> samples = samples_of(i);
    pooled.real_ns.insert(pooled.real_ns.end(), samples.begin(), samples.end());
    pooled.noisy = pooled.noisy || history.points[i].noisy;
    b.low_median_ns = std::min(b.low_median_ns, history.points[i].median_ns);
    b.high_median_ns = std::max(b.high_median_ns, history.points[i].median_ns);
  }
  newest.real_ns = samples_of(latest);
  newest.noisy = last.noisy;
  // The pooled samples span several runs; their spread between runs is judged below
  // (within_range), so the comparison does not cut them into blocks of one run.
  CompareOptions pooled_options = options;
  pooled_options.within_run_blocks = false;
  b.comparison = compare_runs({pooled}, {newest}, pooled_options).rows.at(0);
  b.within_range = b.comparison.new_median_ns >= b.low_median_ns &&
                   b.comparison.new_median_ns <= b.high_median_ns;
  b.verdict = b.comparison.verdict;
  if (b.within_range && (b.verdict == Verdict::kSlower || b.verdict == Verdict::kFaster)) {
    b.verdict = Verdict::kSame;
  }
  return b;
}

std::vector<SeriesReport> analyse(ResultsStore& store, std::vector<BenchmarkHistory> histories,
                                  const DashboardOptions& options) {
  const size_t min_runs = change_point_min_runs(options.change_points);
  std::vector<SeriesReport> out;
  for (BenchmarkHistory& h : histories) {
    SeriesReport s;
    std::vector<double> medians;
    for (const HistoryPoint& p : h.points) medians.push_back(p.median_ns);
    s.change_points = detect_change_points(medians, options.change_points);
    s.min_runs_for_change_points = min_runs;
    s.too_short_for_change_points =
        !h.points.empty() && (min_runs == 0 || h.points.size() < min_runs);
    s.baseline = baseline_of(h, options.baseline_runs, options.compare, [&](size_t i) {
      return stored_samples(store, h.points[i].benchmark_id);
    });
    s.history = std::move(h);
    out.push_back(std::move(s));
  }
  return out;
}

std::string render_index(const std::vector<SeriesReport>& series, const PageInfo& info) {
  std::set<int64_t> runs;
  size_t changes = 0, regressions = 0;
  for (const SeriesReport& s : series) {
    for (const HistoryPoint& p : s.history.points) runs.insert(p.run_id);
    for (const ChangePoint& c : s.change_points) {
      ++changes;
      regressions += c.direction == ChangeDirection::kRegression;
    }
  }
  std::string out = html_page_start(info.title);
  out += "<h1>" + escape_markup(info.title) + "</h1><p class=\"meta\">" +
         std::to_string(series.size()) + " benchmark histories, " + std::to_string(runs.size()) +
         " runs, " + std::to_string(changes) + " change point(s) (" + std::to_string(regressions) +
         " regression(s)). Database <code>" + escape_markup(info.database) + "</code>, generated " +
         escape_markup(info.generated_at) + ".</p>";
  if (series.empty()) {
    return out +
           "<p class=\"none\">No runs stored yet: <code>cuvil-bench run --db ...</code> stores "
           "them.</p></body></html>\n";
  }
  out += change_points_section(series) + verdicts_section(series, info.baseline_runs);
  out +=
      "<p class=\"legend\">Charts: one point per run (its median; hover for details, click for "
      "its flame graph when there is one), the band spans the p" +
      format_fixed(kSpreadLowPercent, 0) + "..p" + format_fixed(kSpreadHighPercent, 0) +
      " of the run's samples, hollow points were measured noisy, dashed lines are change points "
      "(red: regression, green: improvement), dotted purple lines mark a run whose pipeline "
      "config differs from the run before it (hover for what changed).</p>";
  out += suites_sections(series);
  return out + "</body></html>\n";
}

DashboardSummary write_dashboard(ResultsStore& store, const DashboardOptions& options) {
  if (options.out_dir.empty()) throw UserError("report dashboard: the output folder is empty");
  const fs::path out_dir(options.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    throw UserError(options.out_dir + ": cannot create the dashboard folder" +
                    (ec ? ": " + ec.message() : std::string()));
  }
  std::vector<SeriesReport> series = analyse(store, load_histories(store), options);

  DashboardSummary summary;
  std::map<int64_t, std::string> flame_of_run;  // run id -> link inside the site ("" = none)
  for (SeriesReport& s : series) {
    for (const HistoryPoint& p : s.history.points) {
      auto [it, inserted] = flame_of_run.try_emplace(p.run_id);
      if (inserted) {
        const std::string source = find_flame_graph(p, options.flame_dir);
        if (!source.empty()) {
          const std::string link = "flame/run-" + std::to_string(p.run_id) + ".svg";
          fs::create_directories(out_dir / "flame", ec);
          std::ifstream in(source, std::ios::binary);
          std::stringstream svg;
          svg << in.rdbuf();
          if (!in) throw UserError(source + ": cannot read the flame graph");
          // Back to the dashboard, at the first history the run is part of.
          write_atomically(out_dir / link,
                           with_back_link(svg.str(), "../index.html#" + s.history.key()));
          it->second = link;
          ++summary.flame_graphs;
        }
      }
      s.flame_links.push_back(it->second);
      ++summary.points;
    }
    summary.change_points += s.change_points.size();
    summary.too_short += s.too_short_for_change_points;
    for (const ChangePoint& c : s.change_points) {
      summary.regressions += c.direction == ChangeDirection::kRegression;
    }
  }
  summary.series = series.size();
  summary.runs = flame_of_run.size();
  PageInfo info{options.title, store.path(), utc_now(), options.baseline_runs};
  summary.index_path = (out_dir / "index.html").string();
  write_atomically(summary.index_path, render_index(series, info));
  return summary;
}

}  // namespace cuvil::reports::dashboard
