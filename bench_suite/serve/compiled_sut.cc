#include "bench_suite/serve/compiled_sut.h"

#include "base/error.h"
#include "passes/pipeline.h"
#include "probes/clock.h"

namespace cuvil::bench::serve {

CompiledSut::CompiledSut(const Suite& suite, const QueryWorkload& workload,
                         const passes::PipelineConfig& config, int threads, uint64_t seed,
                         bool tiny)
    : workload_(workload) {
  CUVIL_CHECK(!workload.stages.empty(), "a query without stages");
  const int64_t t0 = probes::now_ns();
  for (const QueryStage& s : workload.stages) {
    ir::Graph graph = suite.build(s.rung, tiny);
    Stage stage;
    stage.inputs = ir::random_inputs(graph, seed);
    stage.repeat = s.repeat;
    stage.executor = std::make_unique<runtime::Executor>(
        passes::compile(std::move(graph), config, threads).plan);
    stages_.push_back(std::move(stage));
  }
  compile_s_ = static_cast<double>(probes::now_ns() - t0) * 1e-9;
}

CompiledSut::~CompiledSut() = default;

BatchTimes CompiledSut::process(int samples, Clock& clock) {
  CUVIL_CHECK(samples >= 1 && samples <= workload_.batch, "batch of " + std::to_string(samples));
  // The plan's shapes are static: a partial batch runs padded to the full batch. Stages run on
  // their own random inputs; chaining outputs (prefill -> decode) would not change the cost.
  BatchTimes t;
  for (size_t i = 0; i < stages_.size(); ++i) {
    for (int r = 0; r < stages_[i].repeat; ++r) stages_[i].executor->run(stages_[i].inputs);
    if (i == workload_.first_output_stage) t.first_output_ns = clock.now_ns();
  }
  t.done_ns = clock.now_ns();
  return t;
}

}  // namespace cuvil::bench::serve
