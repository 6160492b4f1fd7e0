// Knob reach per rung: which registered pass parameters ("pass.param") shape which Plan steps
// (runtime::Step::reach, recorded where kernels consume attributes), and which reach nothing.
// What `cuvil-bench list --reach` prints, what `tune` leaves out of its space and what
// cuvil-tune-gen ranks.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"

namespace cuvil::bench {

// Every parameter of every registered pass that applies to `target`, as "pass.param", in
// registry order.
std::vector<std::string> registered_knobs(const std::string& target = "cpu");

struct RungReach {
  std::string rung;
  // knob -> kernel -> steps (counted in the default config's plan, or in the first variant
  // config whose plan the knob reached).
  std::map<std::string, std::map<std::string, int>> steps;
  std::set<std::string> plan_wide;  // knobs that shaped the plan as a whole (Plan::reach)
  // Knobs the default config's plan does not reach, with the first variant whose plan does
  // ("select-lowering.conv_1x1=im2col").
  std::map<std::string, std::string> only_under;
  int configs = 0;  // pipeline configs whose plans were unioned
  bool reaches(const std::string& knob) const {
    return steps.count(knob) != 0 || plan_wide.count(knob) != 0;
  }
};

// The plans of `base` and of each variant of it that changes one choice or boolean parameter to
// another value (a knob may reach steps only under another choice, e.g. conv-tiling's Winograd
// tile under select-lowering conv_3x3: winograd; integer parameters stay at their values), each
// compiled on the rung's scaled-down graph with the full-size graph's kernels pinned (as verify
// does) and run once (kernels record what they read as they run). CPU target only.
RungReach knob_reach(const Suite& suite, const Rung& rung, const passes::PipelineConfig& base,
                     int threads = 1);

}  // namespace cuvil::bench
