// The measurement clock: CLOCK_MONOTONIC_RAW in nanoseconds (immune to NTP slewing).
#pragma once

#include <cstdint>

namespace cuvil::probes {

int64_t now_ns();
// CPU time of the whole process (all threads), in nanoseconds.
int64_t process_cpu_ns();

}  // namespace cuvil::probes
