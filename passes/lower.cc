// Lowering: graph values become plan tensors (inputs, shared constants, arena intermediates) and
// nodes become steps bound to kernels from the runtime's kernel table.
#include "passes/lower.h"

#include <malloc.h>

#include <algorithm>
#include <set>
#include <string>
#include <variant>

#include "base/error.h"
#include "passes/memory_plan.h"
#include "passes/python_binding.h"
#include "passes/threading.h"
#include "runtime/kernel_table.h"

namespace cuvil::passes {

namespace {

using ir::OpKind;
using runtime::PlanTensor;

constexpr int64_t kAlign = 64;
int64_t align_up(int64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

// Storage is fp32 whatever the dtype.
int64_t storage_bytes(const ir::Value& v) {
  return ir::num_elements(v.shape) * ir::kStorageBytesPerElement;
}

double declared_flops(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& out = g.value(n.output).shape;
  double out_elems = static_cast<double>(ir::num_elements(out));
  const double in_elems = static_cast<double>(ir::num_elements(g.value(n.inputs[0]).shape));
  double f = 0;
  switch (n.op) {
    case OpKind::conv2d: {
      const ir::Shape& w = g.value(n.inputs[1]).shape;
      // Blocked [N, ceil(O/16), OH, OW, 16]: count the O real channels, not the padding lanes.
      if (out.size() == 5) out_elems = static_cast<double>(out[0] * out[2] * out[3] * w[0]);
      f = 2.0 * out_elems * static_cast<double>(w[1] * w[2] * w[3]);
      break;
    }
    case OpKind::linear:
    case OpKind::matmul:
      f = 2.0 * out_elems * static_cast<double>(g.value(n.inputs[0]).shape.back());
      break;
    case OpKind::sdpa: {
      const ir::Shape& q = g.value(n.inputs[0]).shape;
      const ir::Shape& k = g.value(n.inputs[1]).shape;
      const ir::Shape& v = g.value(n.inputs[2]).shape;
      const int64_t sq = q[2], skv = k[2];
      double pairs = static_cast<double>(sq) * static_cast<double>(skv);
      if (n.attrs.get_int("causal", 0)) {
        // Query i sees keys 0 .. i + skv - sq.
        pairs = 0;
        for (int64_t i = 0; i < sq; ++i)
          pairs += static_cast<double>(std::min(skv, i + skv - sq + 1));
      }
      f = 2.0 * static_cast<double>(q[0] * q[1]) * pairs * static_cast<double>(q[3] + v[3]);
      break;
    }
    case OpKind::concat:
    case OpKind::slice:
    case OpKind::reshape:
    case OpKind::transpose:
    case OpKind::embedding:
    case OpKind::upsample_nearest2d:
    case OpKind::pad:
    case OpKind::gather:
    case OpKind::scatter:
    case OpKind::expand:
    case OpKind::where:
      f = 0;
      break;
    default:
      f = std::max(in_elems, out_elems);
      break;
  }
  return f + out_elems * static_cast<double>(n.epilogue.size());
}

std::string available_kernels(OpKind op) {
  std::string names;
  for (const runtime::KernelInfo* k : runtime::kernels_for(op)) {
    names += (names.empty() ? "" : ", ") + k->name;
  }
  return names;
}

const runtime::KernelInfo& choose_kernel(const ir::Node& n, const runtime::Step& step) {
  // "impl", not "kernel": pools already use "kernel" for their window size.
  if (!n.attrs.has("impl")) return runtime::default_kernel(n.op);
  const std::string name = n.attrs.get_string("impl", "");
  const runtime::KernelInfo* k = runtime::find_kernel(n.op, name);
  const std::string where = "node '" + n.name + "' (" + std::string(ir::to_string(n.op)) + ")";
  if (!k) {
    throw UserError(where + ": unknown kernel '" + name +
                    "'; available: " + available_kernels(n.op));
  }
  if (k->supports && !k->supports(step)) {
    throw UserError(where + ": kernel '" + name + "' cannot run this node (" + k->description +
                    "); available: " + available_kernels(n.op));
  }
  return *k;
}

}  // namespace

runtime::Step probe_step(const ir::Graph& graph, const ir::Node& n) {
  runtime::Step s;
  s.op = n.op;
  s.node_name = n.name;
  s.attrs = n.attrs;
  s.epilogue = n.epilogue;
  for (ir::ValueId in : n.inputs) {
    s.inputs.push_back(0);
    s.input_shapes.push_back(graph.value(in).shape);
  }
  s.output_shape = graph.value(n.output).shape;
  return s;
}

namespace {

// Bytes the heap holds now (glibc: arenas plus mmapped chunks), to size what a prepare kept.
int64_t heap_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

// With `release_from` (the graph lowered, owned by the caller), constants released from the plan
// are dropped from it too, as soon as their last reader prepared.
runtime::Plan lower_impl(const ir::Graph& graph, ir::Graph* release_from,
                         const LowerOptions& options) {
  runtime::Plan plan;
  plan.threads = std::max(1, options.threads);
  plan.settings = graph.settings;
  // The threading pass may fix the thread count (0 or absent: the caller's choice).
  std::set<std::string> plan_reach;
  auto consumed = [&](const char* key) {
    if (auto it = graph.annotation_origins.find(key); it != graph.annotation_origins.end()) {
      plan_reach.insert(it->second.begin(), it->second.end());
    }
  };
  if (auto it = graph.annotations.find(kThreadsAnnotation);
      it != graph.annotations.end() && it->second > 0) {
    plan.threads = static_cast<int>(it->second);
  }
  // 0 or absent threads is a choice too: the caller's count stands.
  consumed(kThreadsAnnotation);
  if (auto it = graph.annotations.find(kSpinAnnotation); it != graph.annotations.end()) {
    plan.spin_us = static_cast<int>(it->second);
    consumed(kSpinAnnotation);
  }
  if (auto it = graph.annotations.find(kBalanceAnnotation); it != graph.annotations.end()) {
    plan.loop_balance =
        it->second == kBalanceEqual ? runtime::LoopBalance::equal : runtime::LoopBalance::measured;
    consumed(kBalanceAnnotation);
  }
  if (auto it = graph.annotations.find(kGilCheckAnnotation); it != graph.annotations.end()) {
    plan.gil_check_steps = static_cast<int>(it->second);
    consumed(kGilCheckAnnotation);
  }
  std::vector<int32_t> tensor_of(static_cast<size_t>(graph.value_count()), -1);

  auto add_tensor = [&](ir::ValueId id, PlanTensor t) {
    const ir::Value& v = graph.value(id);
    t.name = v.name;
    t.shape = v.shape;
    t.dtype = v.dtype;
    plan.tensors.push_back(std::move(t));
    tensor_of[static_cast<size_t>(id)] = static_cast<int32_t>(plan.tensors.size() - 1);
    return tensor_of[static_cast<size_t>(id)];
  };

  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    PlanTensor t;
    t.storage = PlanTensor::Storage::input;
    t.index = static_cast<int32_t>(i);
    plan.inputs.push_back(add_tensor(graph.inputs()[i], t));
  }

  // Arena offsets from memory planning, if it ran (sized at fp32 storage, like everything).
  int64_t arena_end = 0;
  for (const ir::Node& n : graph.nodes()) {
    const ir::Value& v = graph.value(n.output);
    if (v.arena_offset >= 0) {
      arena_end = std::max(arena_end, align_up(v.arena_offset + storage_bytes(v)));
      consumed(kArenaAnnotation);
    }
  }

  auto operand = [&](ir::ValueId id, const ir::Node& user) -> int32_t {
    if (tensor_of[static_cast<size_t>(id)] >= 0) return tensor_of[static_cast<size_t>(id)];
    const ir::Value& v = graph.value(id);
    if (v.kind != ir::ValueKind::constant) {
      throw UserError("node '" + user.name + "' reads value '" + v.name +
                      "' before it is computed");
    }
    graph.constant_data(id);  // materialise once; the plan shares the graph's buffer
    PlanTensor t;
    t.storage = PlanTensor::Storage::constant;
    t.index = static_cast<int32_t>(plan.constants.size());
    plan.constants.push_back(v.data);
    return add_tensor(id, t);
  };

  // Constants whose every reader replaced them by its prepared form (replaced_inputs) are
  // released once the last reader has prepared, so that lowering holds one weight tensor and its
  // prepared form at a time, never all weights twice. Outputs keep their constants.
  std::vector<int32_t> readers_left(static_cast<size_t>(graph.value_count()), 0);
  std::vector<char> replaced(static_cast<size_t>(graph.value_count()), 1);
  for (const ir::Node& n : graph.nodes()) {
    for (ir::ValueId in : n.inputs) ++readers_left[static_cast<size_t>(in)];
  }
  for (ir::ValueId id : graph.outputs()) replaced[static_cast<size_t>(id)] = 0;
  const bool release = options.target != "cuda" && options.release_replaced_constants;

  if (release_from != nullptr && release) {
    // Constants no step reads (e.g. the weights batch-norm folding replaced) are not held
    // either, from the start.
    for (ir::ValueId id : graph.constants()) {
      if (readers_left[static_cast<size_t>(id)] == 0 &&
          !std::count(graph.outputs().begin(), graph.outputs().end(), id)) {
        release_from->release_constant_data(id);
      }
    }
  }

  for (const ir::Node& n : graph.nodes()) {
    runtime::Step step;
    step.op = n.op;
    step.node_name = n.name;
    step.attrs = n.attrs;
    step.epilogue = n.epilogue;
    double bytes = 0;
    for (ir::ValueId in : n.inputs) {
      step.inputs.push_back(operand(in, n));
      const ir::Value& v = graph.value(in);
      step.input_shapes.push_back(v.shape);
      bytes += static_cast<double>(ir::num_elements(v.shape) * ir::byte_size(v.dtype));
    }
    const ir::Value& out = graph.value(n.output);
    PlanTensor t;
    t.storage = PlanTensor::Storage::arena;
    if (out.arena_offset >= 0) {
      t.offset = out.arena_offset;
    } else {
      t.offset = arena_end;
      arena_end = align_up(arena_end + storage_bytes(out));
    }
    step.output = add_tensor(n.output, t);
    step.output_shape = out.shape;
    bytes += static_cast<double>(ir::num_elements(out.shape) * ir::byte_size(out.dtype));
    step.bytes = bytes;
    step.flops = declared_flops(graph, n);
    if (options.target == "cuda") {
      step.kernel = "cuda";  // the CUDA runtime resolves the implementation from step.attrs
      plan.steps.push_back(std::move(step));
      continue;
    }
    // Knob reach: what the kernel's selection, schedule and prepare read (the first run adds
    // the rest).
    ir::AttrReadRecorder reads;
    const runtime::KernelInfo& k = choose_kernel(n, step);
    step.kernel = k.name;
    step.fn = k.fn;
    runtime::schedule_step(step, k);
    if (k.prepare) {
      std::vector<const float*> constant_inputs;
      for (int32_t t : step.inputs) {
        const PlanTensor& pt = plan.tensors[static_cast<size_t>(t)];
        constant_inputs.push_back(pt.storage == PlanTensor::Storage::constant
                                      ? plan.constants[static_cast<size_t>(pt.index)]->data()
                                      : nullptr);
      }
      const int64_t before = heap_bytes();
      step.prepared = k.prepare(step, constant_inputs.data());
      if (step.prepared) step.prepared_bytes = std::max<int64_t>(0, heap_bytes() - before);
    }
    // A weight a bf16 or int8 kernel replaced by its own copy is read at that copy's size.
    const std::string arithmetic = runtime::kernel_arithmetic(k.name);
    const double stored_bytes = arithmetic == "bf16" ? 2 : arithmetic == "int8" ? 1 : 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::ValueId id = n.inputs[i];
      const ir::Value& value = graph.value(id);
      if (value.kind != ir::ValueKind::constant) continue;
      const size_t v = static_cast<size_t>(id);
      const bool replaced_here = runtime::replaces_input(step, i);
      if (stored_bytes > 0 && replaced_here) {
        step.bytes -= static_cast<double>(ir::num_elements(value.shape)) *
                      (static_cast<double>(ir::byte_size(value.dtype)) - stored_bytes);
      }
      if (!replaced_here) replaced[v] = 0;
      if (--readers_left[v] > 0 || !replaced[v] || !release) continue;
      const PlanTensor& pt = plan.tensors[static_cast<size_t>(step.inputs[i])];
      plan.constants[static_cast<size_t>(pt.index)].reset();
      if (release_from != nullptr) release_from->release_constant_data(id);
    }
    step.add_reach(reads.origins());
    step.add_reach(n.shaped_by);
    plan.steps.push_back(std::move(step));
  }
  plan.arena_bytes = arena_end;

  // Threads: OpenMP when asked, or (auto) when any step calls oneDNN, whose threads are OpenMP's.
  const auto runtime_it = graph.annotations.find(kRuntimeAnnotation);
  const int64_t runtime_choice = runtime_it == graph.annotations.end() ? 0 : runtime_it->second;
  bool library_steps = false;
  for (const runtime::Step& s : plan.steps) {
    library_steps = library_steps || runtime::lowering_of(s.kernel) == "onednn";
  }
  if (runtime_it != graph.annotations.end()) consumed(kRuntimeAnnotation);
  plan.reach.assign(plan_reach.begin(), plan_reach.end());
  plan.thread_runtime =
      runtime_choice == kRuntimeOpenmp || (runtime_choice == kRuntimeAuto && library_steps)
          ? runtime::ThreadRuntime::openmp
          : runtime::ThreadRuntime::pool;

  // Outputs read their storage directly, whether arena, input or constant, repeated or not.
  for (ir::ValueId id : graph.outputs()) {
    plan.outputs.push_back(
        tensor_of[static_cast<size_t>(id)] >= 0
            ? tensor_of[static_cast<size_t>(id)]
            : operand(id, ir::Node{OpKind::reshape, {}, id, {}, {}, "output", {}}));
  }
  return plan;
}

}  // namespace

runtime::Plan lower(const ir::Graph& graph, const LowerOptions& options) {
  return lower_impl(graph, nullptr, options);
}

runtime::Plan lower_releasing(ir::Graph& graph, const LowerOptions& options) {
  return lower_impl(graph, &graph, options);
}

}  // namespace cuvil::passes
