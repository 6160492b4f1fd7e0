#include "runtime/cpu/conv_schedule.h"

namespace cuvil::runtime::cpu {

std::shared_ptr<const void> conv2d_schedule(const Step& step) {
  auto s = std::make_shared<ConvSchedule>();
  s->geometry = conv_geometry(step);
  return s;
}

}  // namespace cuvil::runtime::cpu
