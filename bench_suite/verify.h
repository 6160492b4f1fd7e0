// Compiled pipeline versus the reference interpreter on one graph.
#pragma once

#include <string>
#include <vector>

#include "passes/cuvilpass.h"
#include "passes/ir/graph.h"

namespace cuvil::bench {

// fp32 tolerance (DESIGN.md): max relative error per output, see ir::max_relative_error.
inline constexpr double kFp32Tolerance = 1e-4;

struct OutputCheck {
  std::string name;
  double max_relative_error = 0;
  bool ok = false;
};

// The bound a config's outputs must meet: fp32 1e-4 when every pass computes in f32, else the
// bound the reduced-precision pass states for the loosest precision it asks for (bf16 2e-2,
// int8 5e-2; see passes/precision.h). `precision` (optional) gets "f32", "bf16" or "int8".
double tolerance_for(const passes::PipelineConfig& config, std::string* precision = nullptr);

struct VerifyResult {
  std::string label;                  // which pipeline variant was checked
  double tolerance = kFp32Tolerance;  // the bound its outputs were checked against
  std::vector<OutputCheck> outputs;
  bool ok() const;
};

// Compiles `graph` with `config`, runs it and the reference interpreter on the same random
// inputs (deterministic in seed), and compares every output.
VerifyResult verify_graph(const ir::Graph& graph, const passes::PipelineConfig& config, int threads,
                          uint64_t seed, const std::string& label);

// The default pipeline, no passes, each pass alone, and the given config minus each pass: the
// variants `cuvil-bench verify --each-pass` checks.
std::vector<std::pair<std::string, passes::PipelineConfig>> pass_variants(
    const passes::PipelineConfig& config);

}  // namespace cuvil::bench
