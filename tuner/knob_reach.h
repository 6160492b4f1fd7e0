// Knobs of a search space that reach no step of the tuned rungs (bench_suite/reach.h): `tune`
// leaves them out of its space and cuvil-tune-gen leaves them out of its ranking, since
// whatever importance a model credits them with is noise.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bench_suite/suites.h"
#include "tuner/search_space.h"

namespace cuvil::tuner {

// Searched parameter dimensions ("pass.param") whose knob reaches no step at any of `rungs`
// under the space's baseline configuration (and its one-choice variants), each with the reason
// ("reaches no step at resnet50/b1"). Empty for a target other than cpu (no reach recorded).
std::map<std::string, std::string> unreached_knobs(const SearchSpace& space,
                                                   const bench::Suite& suite,
                                                   const std::vector<bench::Rung>& rungs,
                                                   int threads);

// Fixes each of `unreached` at its default (no longer searched), printing "NAME: REASON".
void leave_out_unreached(SearchSpace& space, const std::map<std::string, std::string>& unreached);

}  // namespace cuvil::tuner
