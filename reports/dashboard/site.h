// The regression dashboard: a static site (index.html with inline SVG charts, plus copies of
// the runs' flame graphs) made from the results store. It opens from disk: no server, no
// network, no script library.
#pragma once

#include <string>
#include <vector>

#include "reports/change_point.h"
#include "reports/compare.h"
#include "reports/dashboard/history.h"
#include "reports/results_store.h"

namespace cuvil::reports::dashboard {

struct DashboardOptions {
  std::string out_dir;    // created if missing; index.html and flame/ are (re)written
  std::string flame_dir;  // another place to look for flame graphs (flame_links.h); optional
  std::string title = "cuvil benchmark dashboard";
  ChangePointOptions change_points;
  CompareOptions compare;
};

// One history with what the dashboard concluded from it.
struct SeriesReport {
  BenchmarkHistory history;
  std::vector<ChangePoint> change_points;  // over the points' medians
  // Two runs or more: the latest run against the one before it (samples from the store).
  bool has_baseline = false;
  BenchmarkComparison latest;
  std::vector<std::string> flame_links;  // per point: a link inside the site, or empty
};

// Change points and the latest comparison of each history; flame links stay empty.
std::vector<SeriesReport> analyse(ResultsStore& store, std::vector<BenchmarkHistory> histories,
                                  const DashboardOptions& options);

struct PageInfo {
  std::string title;
  std::string database;      // shown in the header
  std::string generated_at;  // shown in the header
};

// The whole index.html.
std::string render_index(const std::vector<SeriesReport>& series, const PageInfo& info);

struct DashboardSummary {
  size_t series = 0, runs = 0, points = 0;
  size_t change_points = 0, regressions = 0;
  size_t flame_graphs = 0;  // runs with a linked flame graph
  std::string index_path;
};

// Reads every history, analyses it, copies flame graphs into OUT/flame/run-<id>.svg and writes
// OUT/index.html (atomically: a reader never sees half a page).
DashboardSummary write_dashboard(ResultsStore& store, const DashboardOptions& options);

}  // namespace cuvil::reports::dashboard
