#include "bench_suite/serve/clock.h"

#include <ctime>

#include "probes/clock.h"

namespace cuvil::bench::serve {

int64_t RealClock::now_ns() {
  return probes::now_ns();
}

void RealClock::sleep_until_ns(int64_t t) {
  // Relative sleeps, repeated: the measurement clock is CLOCK_MONOTONIC_RAW, which
  // clock_nanosleep cannot wait on directly. Oversleeping only delays the next batch; arrival
  // times stay as scheduled, so the delay is counted in latency like any queueing.
  for (int64_t left = t - now_ns(); left > 0; left = t - now_ns()) {
    const timespec wait{static_cast<time_t>(left / 1000000000),
                        static_cast<long>(left % 1000000000)};
    nanosleep(&wait, nullptr);
  }
}

}  // namespace cuvil::bench::serve
