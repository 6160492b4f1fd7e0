// `cuvil-bench report flame` (being built this session; replaced by its implementation).
#include "bench_suite/cli/commands.h"
#include "passes/ir/error.h"

namespace cuvil::bench::cli {

Action add_report_flame(CLI::App& report) {
  report.add_subcommand("flame", "not built yet");
  return []() -> int { throw UserError("report flame: not built yet"); };
}

}  // namespace cuvil::bench::cli
