// The clock a load generator runs on. A simulated system under test runs on a virtual clock, so
// scenario tests are deterministic and instant; the compiled pipeline runs on the real one.
// Times are integer nanoseconds so simulated latencies come out exact.
#pragma once

#include <cstdint>

namespace cuvil::bench::serve {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now_ns() = 0;
  // Returns once now_ns() >= t (at once when t has passed).
  virtual void sleep_until_ns(int64_t t) = 0;
};

// Time moves only when someone sleeps: a simulated server "works" by sleeping.
class VirtualClock final : public Clock {
 public:
  int64_t now_ns() override { return now_; }
  void sleep_until_ns(int64_t t) override {
    if (t > now_) now_ = t;
  }

 private:
  int64_t now_ = 0;
};

// The measurement clock (probes::now_ns, CLOCK_MONOTONIC_RAW).
class RealClock final : public Clock {
 public:
  int64_t now_ns() override;
  void sleep_until_ns(int64_t t) override;
};

}  // namespace cuvil::bench::serve
