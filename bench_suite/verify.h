// Compiled pipeline versus the reference interpreter on one graph.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "passes/ir/graph.h"
#include "passes/pipeline.h"
#include "passes/reduced_precision.h"

namespace cuvil::bench {

struct OutputCheck {
  std::string name;
  double max_relative_error = 0;
  // Set only when the error exceeds the bound: how far the reference's own output moves when its
  // float inputs move by kConditioningPerturbation x the bound (relative, at random). A model that
  // rounds computed values (quantization, labels from argmax) jumps whole steps where tiny
  // differences cross a boundary; then the bound says nothing and the check is ill-conditioned.
  double reference_spread = 0;
  bool ill_conditioned = false;  // passed only because the spread covers the error
  bool ok = false;
};

// Perturbation of the conditioning check, as a fraction of the precision's bound (fp32: 1e-6
// relative, the size of a long fp32 sum's rounding; bf16: 1e-3, its storage rounding).
inline constexpr double kConditioningPerturbation = 1e-2;
// An ill-conditioned output passes while its error stays within this many spreads: a kernel bug
// moves outputs by O(1), far past the few steps a boundary crossing moves them.
inline constexpr double kIllConditionedFactor = 4.0;

// The rule on one output past its bound: ill-conditioned (true) when the reference's own spread
// exceeds the bound and the error stays within kIllConditionedFactor spreads.
bool covered_by_spread(double max_relative_error, double reference_spread, double tolerance);

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
  uint64_t seed = 0;
  // The reference on perturbed inputs, by relative perturbation: computed when an output first
  // fails its bound, shared by the variants checked after it.
  mutable std::map<double, std::vector<ir::Tensor>> perturbed;
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
