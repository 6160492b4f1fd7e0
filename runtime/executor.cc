// The Executor: the arena and input buffers are allocated once, every step's operand pointers
// are resolved once, and run() only copies inputs in, calls the kernels in order and copies the
// outputs out.
#include "runtime/executor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "base/error.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime {

namespace {

struct AlignedBuffer {
  float* data = nullptr;
  explicit AlignedBuffer(int64_t bytes) {
    const size_t size = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
    data = static_cast<float*>(std::aligned_alloc(64, size));
    if (!data) throw std::bad_alloc();
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(AlignedBuffer&& o) noexcept : data(o.data) { o.data = nullptr; }
  AlignedBuffer(const AlignedBuffer&) = delete;
};

}  // namespace

struct Executor::State {
  State(int threads, int spin_us, ThreadRuntime runtime, LoopBalance balance)
      : pool(threads, spin_us, runtime, balance) {}
  ThreadPool pool;
  std::unique_ptr<AlignedBuffer> arena;
  std::vector<AlignedBuffer> input_buffers;  // one per graph input
  std::vector<float*> tensor_ptrs;           // resolved storage of every plan tensor
  std::vector<std::vector<const float*>> step_inputs;
  // Where each graph input is read: (step, operand) pairs, rebound by run_views.
  std::vector<std::vector<std::pair<size_t, size_t>>> input_uses;
};

Executor::Executor(Plan plan)
    : plan_(std::move(plan)),
      state_(std::make_unique<State>(plan_.threads, plan_.spin_us, plan_.thread_runtime,
                                     plan_.loop_balance)) {
  State& s = *state_;
  s.arena = std::make_unique<AlignedBuffer>(plan_.arena_bytes);
  for (int32_t t : plan_.inputs) {
    CUVIL_CHECK(t >= 0 && t < static_cast<int32_t>(plan_.tensors.size()), "bad plan input");
    s.input_buffers.emplace_back(ir::num_elements(plan_.tensors[t].shape) * 4);
  }
  s.tensor_ptrs.resize(plan_.tensors.size());
  for (size_t i = 0; i < plan_.tensors.size(); ++i) {
    const PlanTensor& t = plan_.tensors[i];
    const int64_t bytes = ir::num_elements(t.shape) * 4;
    switch (t.storage) {
      case PlanTensor::Storage::arena:
        CUVIL_CHECK(t.offset >= 0 && t.offset % 4 == 0 && t.offset + bytes <= plan_.arena_bytes,
                    "tensor '" + t.name + "' lies outside the arena");
        s.tensor_ptrs[i] = s.arena->data + t.offset / 4;
        break;
      case PlanTensor::Storage::constant:
        CUVIL_CHECK(t.index >= 0 && t.index < static_cast<int32_t>(plan_.constants.size()),
                    "constant '" + t.name + "' has a bad index");
        if (!plan_.constants[t.index]) {
          // Released: only steps that replaced it by their prepared form read it (checked below).
          s.tensor_ptrs[i] = nullptr;
          break;
        }
        CUVIL_CHECK(static_cast<int64_t>(plan_.constants[t.index]->size()) * 4 == bytes,
                    "constant '" + t.name + "' has no data of the right size");
        // Kernels never write their inputs; the const_cast only unifies the pointer table.
        s.tensor_ptrs[i] = const_cast<float*>(plan_.constants[t.index]->data());
        break;
      case PlanTensor::Storage::input:
        CUVIL_CHECK(t.index >= 0 && t.index < static_cast<int32_t>(plan_.inputs.size()),
                    "input '" + t.name + "' has a bad index");
        s.tensor_ptrs[i] = s.input_buffers[static_cast<size_t>(t.index)].data;
        break;
    }
  }
  s.step_inputs.reserve(plan_.steps.size());
  s.input_uses.resize(plan_.inputs.size());
  for (const Step& step : plan_.steps) {
    CUVIL_CHECK(step.fn != nullptr, "step '" + step.node_name + "' has no kernel");
    CUVIL_CHECK(step.output >= 0 && step.output < static_cast<int32_t>(plan_.tensors.size()) &&
                    plan_.tensors[step.output].storage == PlanTensor::Storage::arena,
                "step '" + step.node_name + "' must write an arena tensor");
    std::vector<const float*> ptrs;
    for (int32_t in : step.inputs) {
      CUVIL_CHECK(in >= 0 && in < static_cast<int32_t>(plan_.tensors.size()),
                  "step '" + step.node_name + "' reads a missing tensor");
      CUVIL_CHECK(s.tensor_ptrs[in] != nullptr ||
                      plan_.tensors[in].storage != PlanTensor::Storage::constant ||
                      replaces_input(step, ptrs.size()),
                  "step '" + step.node_name + "' (" + step.kernel + ") reads constant '" +
                      plan_.tensors[in].name + "', which the plan released");
      if (plan_.tensors[in].storage == PlanTensor::Storage::input) {
        s.input_uses[static_cast<size_t>(plan_.tensors[in].index)].push_back(
            {s.step_inputs.size(), ptrs.size()});
      }
      ptrs.push_back(s.tensor_ptrs[in]);
    }
    s.step_inputs.push_back(std::move(ptrs));
  }
  for (int32_t t : plan_.outputs) {
    CUVIL_CHECK(t >= 0 && t < static_cast<int32_t>(plan_.tensors.size()), "bad plan output");
    CUVIL_CHECK(plan_.tensors[t].storage != PlanTensor::Storage::constant ||
                    s.tensor_ptrs[static_cast<size_t>(t)] != nullptr,
                "output '" + plan_.tensors[t].name + "' is a constant the plan released");
  }
}

Executor::~Executor() = default;

std::vector<ir::Tensor> Executor::run(const std::vector<ir::Tensor>& inputs) {
  check_inputs(inputs);
  State& s = *state_;
  std::vector<const float*> views(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::memcpy(s.input_buffers[i].data, inputs[i].data.data(), inputs[i].data.size() * 4);
    views[i] = s.input_buffers[i].data;
  }
  return run_views(views);
}

void Executor::check_inputs(const std::vector<ir::Tensor>& inputs) const {
  if (inputs.size() != plan_.inputs.size()) {
    throw UserError("expected " + std::to_string(plan_.inputs.size()) + " inputs, got " +
                    std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PlanTensor& t = plan_.tensors[plan_.inputs[i]];
    if (inputs[i].shape != t.shape ||
        static_cast<int64_t>(inputs[i].data.size()) != ir::num_elements(t.shape)) {
      throw UserError("input " + std::to_string(i) + " ('" + t.name + "') has shape " +
                      ir::to_string(inputs[i].shape) + ", expected " + ir::to_string(t.shape));
    }
  }
}

std::vector<ir::Tensor> Executor::run_views(const std::vector<const float*>& inputs) {
  execute(inputs);
  const State& s = *state_;
  std::vector<ir::Tensor> outputs;
  outputs.reserve(plan_.outputs.size());
  for (int32_t t : plan_.outputs) {
    const PlanTensor& pt = plan_.tensors[t];
    const float* src = s.tensor_ptrs[t];
    const int64_t n = ir::num_elements(pt.shape);
    outputs.emplace_back(pt.shape, std::vector<float>(src, src + n), pt.dtype);
  }
  return outputs;
}

void Executor::execute(const std::vector<const float*>& inputs) {
  State& s = *state_;
  if (inputs.size() != plan_.inputs.size()) {
    throw UserError("expected " + std::to_string(plan_.inputs.size()) + " inputs, got " +
                    std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    CUVIL_CHECK(inputs[i] != nullptr, "input " + std::to_string(i) + " has no data");
    // Kernels never write their inputs; the const_cast only unifies the pointer table.
    s.tensor_ptrs[static_cast<size_t>(plan_.inputs[i])] = const_cast<float*>(inputs[i]);
    for (const auto& [step, operand] : s.input_uses[i]) s.step_inputs[step][operand] = inputs[i];
  }
  const auto run_step = [&](size_t i) {
    const Step& step = plan_.steps[i];
    s.pool.begin_step(i);
    step.fn(KernelArgs{step, s.step_inputs[i].data(), s.tensor_ptrs[step.output], s.pool});
  };
  if (!reach_recorded_) {
    // The first run records what each kernel reads while it runs (Step::reach), in a loop of
    // its own: later runs take the loops below untouched.
    reach_recorded_ = true;
    StepObserver* const observer = observer_;
    if (observer) observer->on_run_begin();
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      if (observer) observer->on_step_begin(i);
      {
        ir::AttrReadRecorder reads;
        run_step(i);
        plan_.steps[i].add_reach(reads.origins());
      }
      if (observer) observer->on_step_end(i);
    }
    if (observer) observer->on_run_end();
    return;
  }
  // Probes off (the usual case): one branch per run, the step loop untouched.
  if (StepObserver* const observer = observer_) {
    observer->on_run_begin();
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      observer->on_step_begin(i);
      run_step(i);
      observer->on_step_end(i);
    }
    observer->on_run_end();
  } else {
    for (size_t i = 0; i < plan_.steps.size(); ++i) run_step(i);
  }
}

}  // namespace cuvil::runtime
