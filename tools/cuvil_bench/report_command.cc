// `cuvil-bench report`: views made from stored results and probe records (flame graphs, the
// regression dashboard). Each view is a subcommand in its own file.
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

Action add_report_command(CLI::App& app) {
  CLI::App* report = app.add_subcommand("report", "flame graphs and the regression dashboard");
  report->footer(
      "Examples:\n"
      "  cuvil-bench report flame run.json -o flame\n"
      "  cuvil-bench report dashboard -o site/");
  report->require_subcommand(1);
  const Action flame = add_report_flame(*report);
  const Action dashboard = add_report_dashboard(*report);
  return [report, flame, dashboard]() -> int {
    if (report->got_subcommand("flame")) return flame();
    if (report->got_subcommand("dashboard")) return dashboard();
    return 2;
  };
}

}  // namespace cuvil::bench::cli
