#include "probes/clock.h"

#include <time.h>

namespace cuvil::probes {

namespace {
int64_t read(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
}  // namespace

int64_t now_ns() {
  return read(CLOCK_MONOTONIC_RAW);
}
int64_t process_cpu_ns() {
  return read(CLOCK_PROCESS_CPUTIME_ID);
}

}  // namespace cuvil::probes
