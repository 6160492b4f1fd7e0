// PyTorch beside cuvil (`run --baseline torch`): a Python worker (bench_suite/python/
// torch_worker.py) holds the same model in PyTorch eager mode and TorchScript-frozen, on the
// same inputs and thread count, and each of its calls becomes a harness sample (measure.h), so
// PyTorch is measured by the same stopping rule, interleaved with cuvil's samples.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_suite/measure.h"
#include "bench_suite/python_child.h"
#include "passes/ir/tensor.h"

namespace cuvil::bench {

struct TorchBaselineSpec {
  std::string python = "/usr/bin/python3";
  std::string module_path;  // a torch.save'd nn.Module or a torch.jit.save'd TorchScript file
  // Or a built-in suite's reference module (bench_suite/python/torch_reference.py), loaded with
  // the graph's own weights, which the baseline writes to its scratch directory by name.
  std::string builtin;
  bool scaled_down = false;  // the built-in suite's toy-size topology (verify --against torch)
  // Memory cuvil will still take after the worker has loaded (its plan is made after): the
  // worker freezes a TorchScript copy of the weights only if that fits beside it.
  int64_t reserve_bytes = 0;
  int threads = 1;
  // "fp32", or "bf16": the module and its floating inputs cast to bfloat16 (variants named
  // torch-eager-bf16 and torch-script-bf16).
  std::string dtype = "fp32";
};

// Suites with a PyTorch reference module.
bool has_torch_reference(const std::string& suite);
// Those whose reference module also builds the suite's scaled-down topology (resnet50's is
// torchvision's, at its fixed widths only).
bool has_scaled_down_torch_reference(const std::string& suite);

// The worker script: $CUVIL_BENCH_PYTHON_DIR/torch_worker.py, else the source tree's.
std::string torch_worker_path();

// Each output's max relative error (ir::max_relative_error) of `theirs` against cuvil's `ours`,
// in order. UserError when the counts or element counts differ (not the same model).
std::vector<double> relative_errors_vs_cuvil(const std::vector<ir::Tensor>& theirs,
                                             const std::vector<ir::Tensor>& ours,
                                             const std::string& variant);
// The worst of them.
double max_relative_error_vs_cuvil(const std::vector<ir::Tensor>& theirs,
                                   const std::vector<ir::Tensor>& ours, const std::string& variant);

class TorchBaseline {
 public:
  // Starts the worker and loads the module on `inputs`, written as .npy to a scratch directory
  // of its own under the system's temporary directory (removed with it; UserError when it
  // cannot be made). For a built-in suite, `graph` supplies the weights and `rung` the
  // module's options.
  TorchBaseline(const TorchBaselineSpec& spec, const std::vector<ir::Tensor>& inputs,
                const ir::Graph* graph = nullptr, const std::map<std::string, int64_t>& rung = {});

  // "torch-eager" (when the file holds an nn.Module) and "torch-script".
  const std::vector<std::string>& variants() const { return variants_; }
  // Variants that could not be made, and why.
  const std::map<std::string, std::string>& unavailable() const { return unavailable_; }
  const std::string& torch_version() const { return torch_version_; }
  const std::string& blas() const { return blas_; }
  int threads() const { return threads_; }
  // The worker's process, whose threads the harness waits on between turns (settle.h).
  pid_t worker_pid() const;

  // One call of the variant per sample, timed inside the worker.
  Sampler sampler(const std::string& variant);
  std::vector<ir::Tensor> outputs(const std::string& variant);

 private:
  // Declared before the worker, so it outlives it (the worker maps the weights from it).
  struct ScratchDir {
    ScratchDir();
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    std::string path;
  } scratch_;
  std::unique_ptr<PythonChild> child_;
  std::vector<std::string> variants_;
  std::map<std::string, std::string> unavailable_;
  std::string torch_version_, blas_;
  int threads_ = 1;
};

}  // namespace cuvil::bench
