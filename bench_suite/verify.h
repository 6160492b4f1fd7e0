// Compiled pipeline versus the reference interpreter on one graph.
#pragma once

#include <string>
#include <vector>

#include <map>

#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "passes/ir/graph.h"
#include "passes/pipeline.h"
#include "passes/reduced_precision.h"

namespace cuvil::bench {

struct OutputCheck {
  std::string name;
  double max_relative_error = 0;
  bool ok = false;
};

struct VerifyResult {
  std::string label;                   // which pipeline variant was checked
  std::map<std::string, int> kernels;  // the kernels the checked plan ran, with their counts
  int64_t pinned = 0;                  // nodes pinned to the measured graph's choices
  // The bound its outputs were checked against: passes::precision_tolerance of the config
  // (max relative error, see ir::max_relative_error).
  double tolerance = passes::kFp32Tolerance;
  std::vector<OutputCheck> outputs;
  std::vector<ir::Tensor> actual;  // the compiled plan's outputs (verify --against compares them)
  bool ok() const;
};

// The reference interpreter's outputs for a graph on random inputs (deterministic in seed):
// computed once and checked against every pipeline variant, since the fp64 interpreter costs
// several times a compiled run (80% of `verify --each-pass` before it was shared).
struct ReferenceRun {
  std::vector<ir::Tensor> inputs;
  std::vector<ir::Tensor> expected;
};
ReferenceRun run_reference(const ir::Graph& graph, uint64_t seed);

// Compiles `graph` with `config`, runs it on the reference run's inputs and compares every
// output with the interpreter's. With `pins` (passes::resolve_pins of the graph that is
// measured), the checked graph runs the kernels and schedules the measured one runs.
VerifyResult verify_graph(const ir::Graph& graph, const ReferenceRun& reference,
                          const passes::PipelineConfig& config, int threads,
                          const std::string& label, const passes::Pins* pins = nullptr);
// The same on a fresh reference run.
VerifyResult verify_graph(const ir::Graph& graph, const passes::PipelineConfig& config, int threads,
                          uint64_t seed, const std::string& label,
                          const passes::Pins* pins = nullptr);

// The scaled-down graph of a rung checked with the kernels its full-size graph runs: what
// verify (without --full-size), the tuner's gate and cuvil-tune-gen check.
VerifyResult verify_scaled_down(const Suite& suite, const Rung& rung,
                                const passes::PipelineConfig& config, int threads, uint64_t seed,
                                const std::string& label);

// The default pipeline, no passes, each pass alone, and the given config minus each pass: the
// variants `cuvil-bench verify --each-pass` checks.
std::vector<std::pair<std::string, passes::PipelineConfig>> pass_variants(
    const passes::PipelineConfig& config);

}  // namespace cuvil::bench
