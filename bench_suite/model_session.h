// A compiled workload kept ready to be called many times and from several threads at once: the
// front end of the `cuvil` Python module (python/) and anything else that serves a model. The
// plan is compiled once; each concurrent call runs on an execution context of its own (an
// Executor: arena, scratch and thread pool) taken from a pool, and every context shares the
// plan's weights and prepared data.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench_suite/measure.h"
#include "bench_suite/verify.h"
#include "bench_suite/workload.h"
#include "passes/cuvilpass.h"
#include "runtime/executor.h"

namespace cuvil::bench {

struct SessionSpec {
  WorkloadSpec workload;  // --suite + rung, or --model with its bindings
  std::string rung;       // "" : the workload's lightest default rung
  std::string config;     // a .cuvilpass path; "" : opt_level's
  std::string opt_level = "O2";
  int threads = 0;  // per execution context; 0: every core
  std::string target = "cpu";
};

struct TensorInfo {
  std::string name;
  ir::Shape shape;
  ir::DType dtype = ir::DType::f32;
};

class ModelSession {
 public:
  explicit ModelSession(const SessionSpec& spec);
  ~ModelSession();

  const std::string& name() const { return name_; }  // <suite or model>/<rung>
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const std::string& config_path() const { return config_path_; }
  const std::string& config_text() const { return config_text_; }
  int threads() const { return threads_; }
  int gil_check_steps() const { return plan_.gil_check_steps; }
  // The bound outputs are held to against the reference (passes::precision_tolerance).
  double tolerance() const;
  // One line per step: index, kernel, node, output shape, declared GFLOP.
  std::string plan_summary() const;
  std::vector<std::string> step_names() const;  // the plan's steps' node names, in order
  // Made-up inputs of the graph's shapes, as cuvil-bench run draws them (ids within bounds).
  std::vector<ir::Tensor> random_inputs(uint64_t seed) const;

  // A call: inputs[i] holds inputs()[i]'s elements (fp32 storage; ids as exact floats) and stays
  // valid for the call. `observer` (may be null) sees every step. Thread-safe.
  std::vector<ir::Tensor> run(const std::vector<const float*>& inputs,
                              runtime::StepObserver* observer = nullptr);
  // The compiled pipeline against the reference interpreter on random inputs.
  VerifyResult verify(uint64_t seed = 1) const;
  // Execution contexts made so far (the most calls that ran at once).
  size_t contexts() const;
  // After close(), run() throws UserError; contexts are freed once no call uses them.
  void close();
  bool closed() const;

 private:
  std::unique_ptr<runtime::Executor> acquire();
  void release(std::unique_ptr<runtime::Executor> executor);

  std::string name_;
  std::vector<TensorInfo> inputs_, outputs_;
  std::string config_path_, config_text_;
  passes::PipelineConfig config_;
  ir::Graph graph_;  // as built, before the passes: what verify() checks against
  runtime::Plan plan_;
  int threads_ = 1;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<runtime::Executor>> idle_;
  size_t made_ = 0;
  bool closed_ = false;
};

}  // namespace cuvil::bench
