// The compiled pipeline as a serving SUT: every stage of a query compiled through the one compile
// path (passes::compile + runtime::Executor), run back to back on the calling thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench_suite/serve/sut.h"
#include "bench_suite/serve/workload.h"
#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "passes/ir/tensor.h"
#include "runtime/executor.h"

namespace cuvil::bench::serve {

class CompiledSut final : public Sut {
 public:
  // Compiles each stage's graph (`tiny`: the suite's scaled-down topology, for tests) with
  // random inputs from `seed`. Stages share weights through ir::materialize.
  CompiledSut(const Suite& suite, const QueryWorkload& workload,
              const passes::PipelineConfig& config, int threads, uint64_t seed, bool tiny = false);
  ~CompiledSut() override;

  int max_batch() const override { return workload_.batch; }
  int decode_tokens() const override { return workload_.decode_tokens; }
  BatchTimes process(int samples, Clock& clock) override;
  std::string describe() const override { return workload_.summary; }
  double compile_s() const { return compile_s_; }

 private:
  struct Stage {
    std::unique_ptr<runtime::Executor> executor;
    std::vector<ir::Tensor> inputs;
    int repeat = 1;
  };
  QueryWorkload workload_;
  std::vector<Stage> stages_;
  double compile_s_ = 0;
};

}  // namespace cuvil::bench::serve
