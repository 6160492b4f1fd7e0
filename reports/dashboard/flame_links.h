// Finding a run's flame graph (`cuvil-bench report flame RUN.json -o OUT` writes OUT.svg) so
// the dashboard can link it. Conventions, first match wins:
//   1. FLAME_DIR/run-<id>.svg                   (a flame folder keyed by stored run id)
//   2. FLAME_DIR/<stem>.svg                     (stem: the run's --out file name less .json)
//   3. <stem>.svg next to the run's --out file  (the nightly job writes it there)
// The run's --out path comes from the command line the store kept; a relative one is taken from
// the directory the run was made in (its run.json context's working_directory), and, for runs
// stored before that was recorded, from the current directory.
#pragma once

#include <string>

#include "reports/dashboard/history.h"

namespace cuvil::reports::dashboard {

// The value of `--out PATH`, `--out=PATH` or `-o PATH` in a stored command line, or empty.
std::string out_path_of(const std::string& command_line);

// The flame graph SVG of the run behind `point`, or empty when there is none.
std::string find_flame_graph(const HistoryPoint& point, const std::string& flame_dir);

// The flame graph `svg` with a link back to `href` (the dashboard page) drawn in its header, at
// the top left under "Reset Zoom"; an SVG without an end tag is returned as it is.
std::string with_back_link(const std::string& svg, const std::string& href);

}  // namespace cuvil::reports::dashboard
