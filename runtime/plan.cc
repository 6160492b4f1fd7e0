#include "runtime/plan.h"

namespace cuvil::runtime {

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
