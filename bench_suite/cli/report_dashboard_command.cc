// `cuvil-bench report dashboard` (being built this session; replaced by its implementation).
#include "bench_suite/cli/commands.h"
#include "passes/ir/error.h"

namespace cuvil::bench::cli {

Action add_report_dashboard(CLI::App& report) {
  report.add_subcommand("dashboard", "not built yet");
  return []() -> int { throw UserError("report dashboard: not built yet"); };
}

}  // namespace cuvil::bench::cli
