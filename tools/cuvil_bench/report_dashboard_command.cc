// `cuvil-bench report dashboard --db results.db -o site/`: the regression dashboard, a static
// site that opens from disk (reports/dashboard/site.h).
#include <cstdio>
#include <memory>

#include "base/error.h"
#include "reports/dashboard/site.h"
#include "reports/results_store.h"
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

namespace {

struct DashboardCommandOptions {
  DbOptions db;
  reports::dashboard::DashboardOptions site;
};

int write_dashboard(const DashboardCommandOptions& o) {
  const reports::ChangePointOptions& cp = o.site.change_points;
  if (!(cp.significance > 0 && cp.significance < 1)) {
    throw UserError("--significance must be between 0 and 1 (exclusive)");
  }
  if (!(o.site.compare.alpha > 0 && o.site.compare.alpha < 1)) {
    throw UserError("--alpha must be between 0 and 1 (exclusive)");
  }
  const std::string path = resolved_db_path(o.db);
  reports::ResultsStore store = reports::ResultsStore::open_read_only(path);
  const reports::dashboard::DashboardSummary s = reports::dashboard::write_dashboard(store, o.site);
  std::printf(
      "wrote %s: %zu benchmark histories, %zu runs, %zu points, %zu change point(s) (%zu "
      "regression(s)), %zu flame graph(s), %zu history(ies) too short for change points\n",
      s.index_path.c_str(), s.series, s.runs, s.points, s.change_points, s.regressions,
      s.flame_graphs, s.too_short);
  return 0;
}

}  // namespace

Action add_report_dashboard(CLI::App& report) {
  CLI::App* cmd = report.add_subcommand(
      "dashboard",
      "write the regression dashboard (latency histories, change points, latest verdicts) as "
      "a static site that opens from disk");
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench report dashboard -o site/\n"
      "  cuvil-bench report dashboard --db results.db -o site/");
  auto o = std::make_shared<DashboardCommandOptions>();
  add_db_option(*cmd, o->db, /*allow_disable=*/false);
  cmd->add_option("-o,--out", o->site.out_dir, "the site's folder (index.html goes there)")
      ->required();
  cmd->add_option("--flame-dir", o->site.flame_dir,
                  "also look here for flame graphs: run-<id>.svg, or <run.json stem>.svg");
  cmd->add_option("--title", o->site.title, "the page's title");
  cmd->add_option("--significance", o->site.change_points.significance,
                  "change points: permutation-test significance")
      ->capture_default_str();
  cmd->add_option("--min-segment", o->site.change_points.min_segment,
                  "change points: runs needed on each side of a shift")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--min-change", o->site.change_points.min_change_pct,
                  "change points: smaller shifts (in %) are not reported")
      ->check(finite_range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--alpha", o->site.compare.alpha,
                  "latest-vs-baseline verdicts: significance of the Mann-Whitney test")
      ->capture_default_str();
  return [o] { return write_dashboard(*o); };
}

}  // namespace cuvil::bench::cli
