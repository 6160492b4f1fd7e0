#include "bench_suite/model_session.h"

#include <cstdio>
#include <thread>

#include "base/error.h"
#include "base/text_file.h"
#include "passes/pipeline.h"
#include "passes/reduced_precision.h"

namespace cuvil::bench {

ModelSession::ModelSession(const SessionSpec& spec) {
  const Workload w = resolve_workload(spec.workload);
  std::vector<Rung> rungs = select_rungs(w.ladder, spec.rung);
  if (rungs.empty()) rungs = w.ladder.rungs;
  const Rung& rung = rungs.front();
  name_ = w.suite.name + "/" + rung.name;
  config_path_ = spec.config.empty() ? opt_level_config_path(w.suite, spec.target, spec.opt_level)
                                     : spec.config;
  config_ = passes::load_cuvilpass(config_path_);
  if (config_.target != spec.target) {
    throw UserError(config_path_ + ": is a pipeline for target " + config_.target + ", not " +
                    spec.target);
  }
  config_text_ = read_file_or_empty(config_path_);
  if (spec.threads < 0)
    throw UserError("threads must be >= 0, got " + std::to_string(spec.threads));
  threads_ = spec.threads > 0 ? spec.threads
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  graph_ = w.suite.build(rung, /*tiny=*/false);
  for (ir::ValueId id : graph_.inputs()) {
    const ir::Value& v = graph_.value(id);
    inputs_.push_back({v.name, v.shape, v.dtype});
  }
  for (ir::ValueId id : graph_.outputs()) {
    const ir::Value& v = graph_.value(id);
    outputs_.push_back({v.name, v.shape, v.dtype});
  }
  if (spec.target != "cpu") {
    throw UserError("target " + spec.target + ": a session runs on the cpu target only so far");
  }
  plan_ = passes::compile(graph_, config_, threads_).plan;
}

ModelSession::~ModelSession() = default;

std::string ModelSession::plan_summary() const {
  std::string out = name_ + ": " + std::to_string(plan_.steps.size()) + " steps, " +
                    std::to_string(plan_.threads) + " thread(s), arena " +
                    std::to_string(plan_.arena_bytes >> 10) + " KiB, " +
                    std::to_string(plan_.total_flops() * 1e-9) + " GFLOP\n";
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    const runtime::Step& s = plan_.steps[i];
    char line[512];
    std::snprintf(line, sizeof line, "%4zu  %-24s %-40s %-18s %.4f GFLOP\n", i, s.kernel.c_str(),
                  s.node_name.c_str(), ir::to_string(s.output_shape).c_str(), s.flops * 1e-9);
    out += line;
  }
  return out;
}

std::vector<std::string> ModelSession::step_names() const {
  std::vector<std::string> out;
  for (const runtime::Step& s : plan_.steps) out.push_back(s.node_name);
  return out;
}

std::vector<ir::Tensor> ModelSession::random_inputs(uint64_t seed) const {
  return ir::random_inputs(graph_, seed);
}

std::unique_ptr<runtime::Executor> ModelSession::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) throw UserError(name_ + ": the model is closed");
    if (!idle_.empty()) {
      std::unique_ptr<runtime::Executor> e = std::move(idle_.back());
      idle_.pop_back();
      return e;
    }
    ++made_;
  }
  // A new context: the plan's copy shares its constants and prepared data (shared_ptr).
  return std::make_unique<runtime::Executor>(plan_);
}

void ModelSession::release(std::unique_ptr<runtime::Executor> executor) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!closed_) idle_.push_back(std::move(executor));
}

std::vector<ir::Tensor> ModelSession::run(const std::vector<const float*>& inputs,
                                          runtime::StepObserver* observer) {
  if (inputs.size() != inputs_.size()) {
    throw UserError(name_ + ": expected " + std::to_string(inputs_.size()) + " inputs, got " +
                    std::to_string(inputs.size()));
  }
  std::unique_ptr<runtime::Executor> e = acquire();
  struct Return {
    ModelSession* session;
    std::unique_ptr<runtime::Executor>* executor;
    ~Return() {
      (*executor)->set_observer(nullptr);
      session->release(std::move(*executor));
    }
  } give_back{this, &e};
  e->set_observer(observer);
  return e->run_views(inputs);
}

double ModelSession::tolerance() const {
  return passes::precision_tolerance(config_);
}

VerifyResult ModelSession::verify(uint64_t seed) const {
  return verify_graph(graph_, config_, threads_, seed, "config");
}

size_t ModelSession::contexts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return made_;
}

void ModelSession::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  idle_.clear();
}

bool ModelSession::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

}  // namespace cuvil::bench
