#include "tuner/knob_reach.h"

#include <cstdio>
#include <set>

#include "bench_suite/reach.h"
#include "tuner/isolation.h"

namespace cuvil::tuner {

std::map<std::string, std::string> unreached_knobs(const SearchSpace& space,
                                                   const bench::Suite& suite,
                                                   const std::vector<bench::Rung>& rungs,
                                                   int threads) {
  std::map<std::string, std::string> out;
  if (space.target != "cpu" || rungs.empty()) return out;
  const passes::PipelineConfig base = config_from_values(space, default_values(space), suite.name);
  // In a child process: reach runs kernels (oneDNN, OpenMP), and a tuner that forks trials must
  // not have started OpenMP's threads itself (libgomp does not survive fork).
  const ChildOutcome outcome = run_isolated(
      [&](ChildChannel& channel) {
        std::set<std::string> reached;
        for (const bench::Rung& rung : rungs) {
          const bench::RungReach r = bench::knob_reach(suite, rung, base, threads);
          for (const auto& [knob, kernels] : r.steps) reached.insert(knob);
          reached.insert(r.plan_wide.begin(), r.plan_wide.end());
        }
        channel.result({{"reached", reached}});
      },
      [](const nlohmann::json&) { return true; }, ChildLimits{});
  if (!outcome.ok) {
    std::printf("warning: knob reach not computed (%s); every knob stays searched\n",
                outcome.reason.c_str());
    return out;
  }
  const std::set<std::string> reached = outcome.result.at("reached").get<std::set<std::string>>();
  std::string where;
  for (const bench::Rung& rung : rungs) {
    where += (where.empty() ? "" : ", ") + suite.name + "/" + rung.name;
  }
  for (const Dimension* d : space.searched()) {
    if (d->is_switch() || reached.count(d->name)) continue;
    out[d->name] = "reaches no step at " + where;
  }
  return out;
}

void leave_out_unreached(SearchSpace& space, const std::map<std::string, std::string>& unreached) {
  for (const auto& [name, reason] : unreached) {
    Dimension* d = space.find(name);
    if (d == nullptr) continue;
    d->fixed = d->default_value;
    std::printf("%s: %s (left out of the search space, fixed at its default)\n", name.c_str(),
                reason.c_str());
  }
}

}  // namespace cuvil::tuner
