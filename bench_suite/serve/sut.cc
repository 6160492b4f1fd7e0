#include "bench_suite/serve/sut.h"

#include "base/error.h"

namespace cuvil::bench::serve {

SimulatedSut::SimulatedSut(int max_batch, int64_t service_ns, int decode_tokens, int64_t token_ns)
    : max_batch_(max_batch),
      service_ns_(service_ns),
      decode_tokens_(decode_tokens),
      token_ns_(token_ns) {
  if (max_batch < 1) throw UserError("simulated SUT: batch must be >= 1");
  if (service_ns <= 0) throw UserError("simulated SUT: service time must be > 0");
  if (decode_tokens < 0 || token_ns < 0) {
    throw UserError("simulated SUT: decode tokens and token time must be >= 0");
  }
}

BatchTimes SimulatedSut::process(int samples, Clock& clock) {
  CUVIL_CHECK(samples >= 1 && samples <= max_batch_, "batch of " + std::to_string(samples));
  BatchTimes t;
  clock.sleep_until_ns(clock.now_ns() + service_ns_);
  t.first_output_ns = clock.now_ns();
  clock.sleep_until_ns(t.first_output_ns + decode_tokens_ * token_ns_);
  t.done_ns = clock.now_ns();
  return t;
}

std::string SimulatedSut::describe() const {
  return "simulated server: batch " + std::to_string(max_batch_) + ", " +
         std::to_string(service_ns_) + " ns per batch";
}

}  // namespace cuvil::bench::serve
