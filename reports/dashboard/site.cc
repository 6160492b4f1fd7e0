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
  if (p.noisy) t += "\nNOISY measurement";
  if (!flame_link.empty()) t += "\nclick: flame graph";
  return t;
}

std::string change_tooltip(const BenchmarkHistory& h, const ChangePoint& c) {
  const HistoryPoint& good = h.points[c.index - 1];
  const HistoryPoint& bad = h.points[c.index];
  return std::string(direction_name(c.direction)) + " of " + format_fixed(c.change_pct, 1, true) +
         "%: " + format_time(c.before) + " -> " + format_time(c.after) + "\ncommits " +
         short_commit(good.commit) + ".." + short_commit(bad.commit) + " (runs " +
         std::to_string(good.run_id) + ".." + std::to_string(bad.run_id) + ", " +
         date_part(good.date) + " .. " + date_part(bad.date) + "), p " + format_p_value(c.p_value);
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
                             format_fixed(cp.change_pct, 1, true) + "%", change_tooltip(h, cp)});
  }
  return chart;
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
  if (all.empty()) {
    return out + "<p class=\"none\">No change points in " + std::to_string(series.size()) +
           " histories.</p></section>";
  }
  out +=
      "<table class=\"change-points\"><tr><th>benchmark</th><th>machine</th><th>direction</th>"
      "<th>change</th><th>before</th><th>after</th><th>commit range</th><th>runs</th>"
      "<th>dates</th><th>p</th></tr>";
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
        cell(format_time(c.after)) +
        cell("<code>" + escape_markup(short_commit(good.commit) + ".." + short_commit(bad.commit)) +
                 "</code>",
             "commits text") +
        cell(std::to_string(good.run_id) + ".." + std::to_string(bad.run_id)) +
        cell(escape_markup(date_part(good.date) + " .. " + date_part(bad.date))) +
        cell(format_p_value(c.p_value)) + "</tr>";
  }
  return out + "</table></section>";
}

std::string verdicts_section(const std::vector<SeriesReport>& series) {
  std::string out =
      "<section id=\"latest\"><h2>Latest run against its baseline</h2>"
      "<p class=\"legend\">Baseline: the run before the latest of the same benchmark, target, "
      "thread count and machine. Verdict: two-sided Mann-Whitney U test on the raw samples "
      "(as <code>cuvil-bench compare</code>).</p>"
      "<div class=\"wide\"><table "
      "class=\"verdicts\"><tr><th>benchmark</th><th>machine</th><th>baseline</th>"
      "<th>latest</th><th>baseline median</th><th>latest median</th><th>change</th><th>p</th>"
      "<th>verdict</th><th>GFLOP/s</th><th>% peak</th><th>GB/s</th><th>% bw</th>"
      "<th>flame</th></tr>";
  for (const SeriesReport& s : series) {
    const BenchmarkHistory& h = s.history;
    if (h.points.empty()) continue;
    const HistoryPoint& last = h.points.back();
    out += "<tr>" + cell(series_link(s)) + cell(escape_markup(h.host), "text");
    if (s.has_baseline) {
      const HistoryPoint& base = h.points[h.points.size() - 2];
      const BenchmarkComparison& c = s.latest;
      std::string verdict = verdict_name(c.verdict);
      std::string notes;
      if (c.low_power) notes += " <span class=\"note\">(few samples)</span>";
      if (c.noisy) notes += " <span class=\"note\">(noisy)</span>";
      out += cell("run " + std::to_string(base.run_id) + " <code>" +
                  escape_markup(short_commit(base.commit)) + "</code>") +
             cell("run " + std::to_string(last.run_id) + " <code>" +
                  escape_markup(short_commit(last.commit)) + "</code>") +
             cell(format_time(c.old_median_ns)) + cell(format_time(c.new_median_ns)) +
             cell(format_fixed(c.change_pct, 2, true) + "%") +
             cell(format_p_value(c.test.p_value)) +
             cell(verdict + notes, "verdict verdict-" + verdict);
    } else {
      out += cell("-") +
             cell("run " + std::to_string(last.run_id) + " <code>" +
                  escape_markup(short_commit(last.commit)) + "</code>") +
             cell("-") + cell(format_time(last.median_ns)) + cell("-") + cell("-") +
             cell("first run", "verdict");
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
      "<th>commit</th><th>machine</th><th>median</th><th>p" +
      format_fixed(kSpreadLowPercent, 0) + "</th><th>p" + format_fixed(kSpreadHighPercent, 0) +
      "</th><th>samples</th><th>GFLOP/s</th><th>% peak</th><th>GB/s</th>"
      "<th>% bw</th><th>flame</th></tr>";
  for (size_t i = h.points.size(); i-- > 0;) {
    const HistoryPoint& p = h.points[i];
    out += "<tr>" + cell(std::to_string(p.run_id)) + cell(escape_markup(p.date), "text") +
           cell("<code>" + escape_markup(short_commit(p.commit)) + "</code>", "text") +
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

std::vector<SeriesReport> analyse(ResultsStore& store, std::vector<BenchmarkHistory> histories,
                                  const DashboardOptions& options) {
  std::vector<SeriesReport> out;
  for (BenchmarkHistory& h : histories) {
    SeriesReport s;
    std::vector<double> medians;
    for (const HistoryPoint& p : h.points) medians.push_back(p.median_ns);
    s.change_points = detect_change_points(medians, options.change_points);
    if (h.points.size() >= 2) {
      BenchmarkSamples old_run, new_run;
      old_run.name = new_run.name = h.name;
      const HistoryPoint& base = h.points[h.points.size() - 2];
      const HistoryPoint& last = h.points.back();
      old_run.real_ns = stored_samples(store, base.benchmark_id);
      new_run.real_ns = stored_samples(store, last.benchmark_id);
      old_run.noisy = base.noisy;
      new_run.noisy = last.noisy;
      const Comparison c = compare_runs({old_run}, {new_run}, options.compare);
      if (!c.rows.empty()) {
        s.has_baseline = true;
        s.latest = c.rows.front();
      }
    }
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
  out += change_points_section(series) + verdicts_section(series);
  out +=
      "<p class=\"legend\">Charts: one point per run (its median; hover for details, click for "
      "its flame graph when there is one), the band spans the p" +
      format_fixed(kSpreadLowPercent, 0) + "..p" + format_fixed(kSpreadHighPercent, 0) +
      " of the run's samples, hollow points were measured noisy, dashed lines are change points "
      "(red: regression, green: improvement).</p>";
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
    for (const ChangePoint& c : s.change_points) {
      summary.regressions += c.direction == ChangeDirection::kRegression;
    }
  }
  summary.series = series.size();
  summary.runs = flame_of_run.size();
  PageInfo info{options.title, store.path(), utc_now()};
  summary.index_path = (out_dir / "index.html").string();
  write_atomically(summary.index_path, render_index(series, info));
  return summary;
}

}  // namespace cuvil::reports::dashboard
