#include "runtime/plan.h"

#include <set>

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

int64_t Plan::weight_bytes() const {
  int64_t b = 0;
  std::set<const void*> seen;
  for (const auto& c : constants) {
    if (c && seen.insert(c.get()).second) b += static_cast<int64_t>(c->size() * sizeof(float));
  }
  for (const Step& s : steps) {
    if (s.prepared && seen.insert(s.prepared.get()).second) b += s.prepared_bytes;
  }
  return b;
}

}  // namespace cuvil::runtime
