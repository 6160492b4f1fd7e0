// The system under test (SUT) of the serving scenarios, in the MLPerf LoadGen sense: something
// that processes a batch of queries. The compiled pipeline is one (compiled_sut.h); a simulated
// server with a fixed service time is another, for deterministic tests of the load generator.
#pragma once

#include <cstdint>
#include <string>

#include "bench_suite/serve/clock.h"

namespace cuvil::bench::serve {

// When a batch's first output (an LLM's first token) and its last output were ready.
struct BatchTimes {
  int64_t first_output_ns = 0;
  int64_t done_ns = 0;
};

class Sut {
 public:
  virtual ~Sut() = default;
  // Queries one batch may hold (the rung's batch size).
  virtual int max_batch() const = 0;
  // Output tokens a query produces after its first one (LLM decode steps); 0 for a model whose
  // query has a single output. Non-zero turns on time-to-first-token and time-per-output-token.
  virtual int decode_tokens() const { return 0; }
  // Processes `samples` queries (1..max_batch) as one batch and returns when they are done,
  // reading `clock` for the times. A partial batch costs what a full one does (static shapes).
  virtual BatchTimes process(int samples, Clock& clock) = 0;
  virtual std::string describe() const = 0;
};

// A server that takes exactly `service_ns` per batch to its first output and `token_ns` per
// decode token after it; it "works" by sleeping on the clock, so on a VirtualClock it is an exact
// M/D/1 server (batch 1) with service time service_ns + decode_tokens * token_ns.
class SimulatedSut final : public Sut {
 public:
  SimulatedSut(int max_batch, int64_t service_ns, int decode_tokens = 0, int64_t token_ns = 0);
  int max_batch() const override { return max_batch_; }
  int decode_tokens() const override { return decode_tokens_; }
  BatchTimes process(int samples, Clock& clock) override;
  std::string describe() const override;

 private:
  int max_batch_;
  int64_t service_ns_;
  int decode_tokens_;
  int64_t token_ns_;
};

}  // namespace cuvil::bench::serve
