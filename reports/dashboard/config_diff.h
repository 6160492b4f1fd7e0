// What changed between two pipeline configs, as the dashboard shows it beside a point whose
// config hash differs from the point before it: the pass parameters that changed (old → new),
// the passes added or removed, the target, the order. Read from the `.cuvilpass` text the
// results store keeps per config hash (its `configs` table). reports/ does not link the pass
// registry, so this reads the file's structure only: a parameter one file sets and the other
// leaves out shows as "(default)".
#pragma once

#include <string>
#include <vector>

namespace cuvil::reports::dashboard {

// One line per difference, in the new config's pass order, e.g. "gemm-tiling.mc: 192 → 256",
// "+reduced-precision" (pass added), "-layout" (pass removed), "target: cpu → cuda",
// "pass order". Empty when the files hold the same passes and parameters. A config whose text
// was not stored, or does not read as a `.cuvilpass` mapping, gives one line saying so.
std::vector<std::string> config_changes(const std::string& old_yaml, const std::string& new_yaml);

// The changes joined for one line of text: "a; b; c" ("" when none).
std::string join_changes(const std::vector<std::string>& changes);

}  // namespace cuvil::reports::dashboard
