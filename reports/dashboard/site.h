// The regression dashboard: a static site (index.html with inline SVG charts, plus copies of
// the runs' flame graphs) made from the results store. It opens from disk: no server, no
// network, no script library.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "reports/change_point.h"
#include "reports/compare.h"
#include "reports/dashboard/history.h"
#include "reports/results_store.h"

namespace cuvil::reports::dashboard {

// The latest run of a history is compared with this many runs before it of the same config
// (K): their samples pooled, so one lucky or unlucky night does not make the verdict.
constexpr size_t kBaselineRuns = 5;

struct DashboardOptions {
  std::string out_dir;    // created if missing; index.html and flame/ are (re)written
  std::string flame_dir;  // another place to look for flame graphs (flame_links.h); optional
  std::string title = "cuvil benchmark dashboard";
  ChangePointOptions change_points;
  CompareOptions compare;
  size_t baseline_runs = kBaselineRuns;
};

// The latest run against the runs before it of the same config hash (the history already holds
// one benchmark, target, thread count and machine).
struct Baseline {
  // Indices into the history's points of the comparable runs before the latest, oldest first:
  // the newest `baseline_runs` of them, or fewer when there are not that many.
  std::vector<size_t> points;
  // As many comparable runs as DashboardOptions::baseline_runs: the comparison was made.
  // Otherwise the verdict is "not enough data".
  bool enough = false;
  // The latest run's samples against the baseline runs' samples pooled (compare_runs: the
  // Mann-Whitney U test, the pooled median as the old median).
  BenchmarkComparison comparison;
  // The lowest and highest median among the baseline runs. A latest median inside this range
  // is within what the last runs did among themselves: its verdict stays "same".
  double low_median_ns = 0, high_median_ns = 0;
  bool within_range = false;
  Verdict verdict = Verdict::kSame;
};

// The baseline of the last point of `history`, whose samples `samples_of` gives by point index.
Baseline baseline_of(const BenchmarkHistory& history, size_t baseline_runs,
                     const CompareOptions& options,
                     const std::function<std::vector<double>(size_t)>& samples_of);

// One history with what the dashboard concluded from it.
struct SeriesReport {
  BenchmarkHistory history;
  std::vector<ChangePoint> change_points;  // over the points' medians
  // change_point_min_runs of the options; the history has fewer points than that (and is not
  // empty): no change point can be expected, and the page says so.
  size_t min_runs_for_change_points = 0;
  bool too_short_for_change_points = false;
  Baseline baseline;                     // of the latest run (samples from the store)
  std::vector<std::string> flame_links;  // per point: a link inside the site, or empty
};

// Change points and the latest comparison of each history; flame links stay empty.
std::vector<SeriesReport> analyse(ResultsStore& store, std::vector<BenchmarkHistory> histories,
                                  const DashboardOptions& options);

struct PageInfo {
  std::string title;
  std::string database;                  // shown in the header
  std::string generated_at;              // shown in the header
  size_t baseline_runs = kBaselineRuns;  // of the verdict table's header
};

// The whole index.html.
std::string render_index(const std::vector<SeriesReport>& series, const PageInfo& info);

struct DashboardSummary {
  size_t series = 0, runs = 0, points = 0;
  size_t change_points = 0, regressions = 0;
  size_t too_short = 0;     // histories too short for change points
  size_t flame_graphs = 0;  // runs with a linked flame graph
  std::string index_path;
};

// Reads every history, analyses it, copies flame graphs into OUT/flame/run-<id>.svg and writes
// OUT/index.html (atomically: a reader never sees half a page).
DashboardSummary write_dashboard(ResultsStore& store, const DashboardOptions& options);

}  // namespace cuvil::reports::dashboard
