// The execution Plan: what the runtime can execute. Lowering (passes/lower.h) produces it from an
// optimised graph; the Executor runs it. The runtime knows pass parameters only through what
// lowering wrote here: the kernel chosen per step, attributes, epilogues and arena offsets.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "passes/ir/graph.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime {

class ThreadPool;
struct Step;

// Everything a kernel sees. in[i] points at the step's i-th input, out at its output.
struct KernelArgs {
  const Step& step;
  const float* const* in;
  float* out;
  ThreadPool& pool;
};
using KernelFn = void (*)(const KernelArgs& args);

struct PlanTensor {
  enum class Storage : uint8_t { arena, constant, input };
  std::string name;
  ir::Shape shape;
  ir::DType dtype = ir::DType::f32;
  Storage storage = Storage::arena;
  int64_t offset = 0;  // arena: byte offset
  int32_t index = -1;  // constant: index into Plan::constants; input: index into Plan::inputs
};

struct Step {
  ir::OpKind op;
  std::string kernel;  // the kernel's registered name, e.g. "conv2d.im2col"
  KernelFn fn = nullptr;
  std::vector<int32_t> inputs;  // indices into Plan::tensors
  int32_t output = -1;
  std::vector<ir::Shape> input_shapes;
  ir::Shape output_shape;
  ir::Attrs attrs;
  std::vector<ir::EpilogueStep> epilogue;
  std::string node_name;
  double flops = 0;  // declared work: 2 FLOPs per multiply-accumulate
  double bytes = 0;  // declared traffic: inputs read once + output written once

  // The kernel's schedule, read once from `attrs` before the first run into the kernel's own
  // typed struct (KernelInfo::schedule, runtime::schedule_step), so that no run looks up or
  // parses an attribute; null when the kernel has no schedule hook.
  std::shared_ptr<const void> schedule;
  // Kernel-specific data made once before execution from the step's constant inputs (packed
  // weight panels, bf16 or int8 copies with scales, ...); null when the kernel prepares nothing.
  // The kernel that made it is the only one that reads it.
  std::shared_ptr<const void> prepared;
  // Heap bytes `prepared` holds (the net growth of the heap across the prepare call).
  int64_t prepared_bytes = 0;

  // Knob reach: the pass parameters ("pass.param", sorted) that shaped this step as its kernel
  // consumed them. Lowering records the attributes with an origin (ir::Attrs::origin) that the
  // kernel's selection and prepare read, and the node's structural origins (ir::Node::shaped_by);
  // the executor adds what the kernel reads on the step's first run (ir::AttrReadRecorder). A
  // parameter that only sets attributes no kernel reads reaches nothing. CPU target only.
  std::vector<std::string> reach;
  void add_reach(const std::set<std::string>& origins);
};

struct Plan {
  std::vector<PlanTensor> tensors;
  std::vector<Step> steps;
  // A null entry is a released constant: every step reading it replaced it by its prepared
  // form (KernelInfo::replaced_inputs), so no step reads it and the plan does not hold it.
  std::vector<std::shared_ptr<const std::vector<float>>> constants;
  std::vector<int32_t> inputs;   // graph inputs, in graph order (tensor indices)
  std::vector<int32_t> outputs;  // graph outputs, in graph order (tensor indices)
  int64_t arena_bytes = 0;
  int threads = 1;
  ThreadRuntime thread_runtime = ThreadRuntime::pool;
  int spin_us = ThreadPool::kDefaultSpinUs;  // idle pool threads spin this long, then sleep
  // How the pool cuts balanced loops; the threading pass's default where no pass set it.
  LoopBalance loop_balance = LoopBalance::measured;
  // Runs called from Python take the GIL back every this many steps (0: never); see
  // passes/python_binding.h. The runtime itself never touches Python.
  int gil_check_steps = 0;
  // Pass parameters that shaped the plan as a whole (threads, the thread runtime, spinning, loop
  // balance, the GIL check, arena placement), as lowering consumed them; sorted.
  std::vector<std::string> reach;
  // The graph's plan-wide settings (ir::Graph::settings) as lowering found them.
  ir::Attrs settings;

  double total_flops() const;
  // Weight bytes the plan holds: its unreleased constants (each buffer once) and the steps'
  // prepared forms.
  int64_t weight_bytes() const;
  double total_bytes() const;
};

}  // namespace cuvil::runtime
