#include "runtime/plan.h"

namespace cuvil::runtime {

void Step::add_reach(const std::set<std::string>& origins) {
  std::set<std::string> all(reach.begin(), reach.end());
  all.insert(origins.begin(), origins.end());
  reach.assign(all.begin(), all.end());
}

double Plan::total_flops() const {
  double f = 0;
  for (const Step& s : steps) f += s.flops;
  return f;
}

double Plan::total_bytes() const {
  double b = 0;
  for (const Step& s : steps) b += s.bytes;
  return b;
}

}  // namespace cuvil::runtime
