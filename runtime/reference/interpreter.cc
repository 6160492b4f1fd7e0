// The reference interpreter's driver: binds inputs and constants, runs each node's kernel in
// graph order, applies fused epilogues and frees intermediates after their last use.
#include "runtime/reference/interpreter.h"

#include <string>

#include "base/error.h"
#include "passes/ir/verifier.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

namespace {

// Where a value's numbers live while the graph runs. Inputs and constants point at storage
// owned by the caller or the graph (never copied); intermediates own theirs.
struct Slot {
  const float* data = nullptr;
  std::vector<float> owned;
};

void check_inputs(const ir::Graph& graph, const std::vector<ir::Tensor>& inputs) {
  const auto& ids = graph.inputs();
  if (inputs.size() != ids.size()) {
    throw UserError("graph expects " + std::to_string(ids.size()) + " inputs, got " +
                    std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const ir::Value& v = graph.value(ids[i]);
    const ir::Tensor& t = inputs[i];
    if (t.shape != v.shape) {
      throw UserError("input '" + v.name + "' expects shape " + ir::to_string(v.shape) + ", got " +
                      ir::to_string(t.shape));
    }
    if (t.numel() != ir::num_elements(v.shape)) {
      throw UserError("input '" + v.name + "' holds " + std::to_string(t.numel()) +
                      " values for shape " + ir::to_string(v.shape));
    }
  }
}

void run_main_op(const OpArgs& args) {
  using ir::OpKind;
  const OpKind op = args.node.op;
  // Families first (op.h's predicates say which ops they hold), then one op each.
  if (ir::is_unary_elementwise(op)) return run_unary(args);
  if (ir::is_binary_elementwise(op)) return run_binary(args);
  if (ir::is_reduction(op)) return run_reduce(args);
  switch (op) {
    case OpKind::conv2d:
      return run_conv2d(args);
    case OpKind::linear:
      return run_linear(args);
    case OpKind::matmul:
      return run_matmul(args);
    case OpKind::batch_norm:
      return run_batch_norm(args);
    case OpKind::group_norm:
      return run_group_norm(args);
    case OpKind::layer_norm:
      return run_layer_norm(args);
    case OpKind::rms_norm:
      return run_rms_norm(args);
    case OpKind::softmax:
      return run_softmax(args);
    case OpKind::sdpa:
      return run_sdpa(args);
    case OpKind::rope:
      return run_rope(args);
    case OpKind::max_pool2d:
      return run_max_pool2d(args);
    case OpKind::avg_pool2d:
      return run_avg_pool2d(args);
    case OpKind::global_avg_pool:
      return run_global_avg_pool(args);
    case OpKind::upsample_nearest2d:
      return run_upsample_nearest2d(args);
    case OpKind::concat:
      return run_concat(args);
    case OpKind::slice:
      return run_slice(args);
    case OpKind::reshape:
      return run_reshape(args);
    case OpKind::transpose:
      return run_transpose(args);
    case OpKind::embedding:
      return run_embedding(args);
    case OpKind::pad:
      return run_pad(args);
    case OpKind::gather:
      return run_gather(args);
    case OpKind::scatter:
      return run_scatter(args);
    case OpKind::where:
      return run_where(args);
    case OpKind::expand:
      return run_expand(args);
    case OpKind::compare:
      return run_compare(args);
    case OpKind::cumsum:
      return run_cumsum(args);
    case OpKind::cast:
      return run_cast(args);
    default:
      break;
  }
  CUVIL_CHECK(false, "unhandled op " + std::string(ir::to_string(op)));
}

// The running result is always the left operand of a binary step, whose right operand is any of
// the node's inputs (by convention one appended after the op's own).
void apply_epilogue(const OpArgs& args, const std::vector<View>& all_inputs) {
  const int64_t n = ir::num_elements(args.out_shape);
  for (const ir::EpilogueStep& step : args.node.epilogue) {
    if (ir::is_unary_elementwise(step.op)) {
      for (int64_t i = 0; i < n; ++i) args.out[i] = apply_unary(step.op, step.params, args.out[i]);
    } else {
      CUVIL_CHECK(ir::is_binary_elementwise(step.op), "epilogue step is not elementwise");
      CUVIL_CHECK(step.input >= 0 && step.input < static_cast<int>(all_inputs.size()),
                  "epilogue operand out of range in node '" + args.node.name + "'");
      const View running{args.out, args.out_shape};
      binary_broadcast(step.op, running, all_inputs[static_cast<size_t>(step.input)],
                       args.out_shape, args.out);
    }
  }
}

}  // namespace

std::vector<ir::Tensor> interpret(const ir::Graph& graph, const std::vector<ir::Tensor>& inputs) {
  ir::verify(graph);
  check_inputs(graph, inputs);

  std::vector<Slot> slots(static_cast<size_t>(graph.value_count()));
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    slots[static_cast<size_t>(graph.inputs()[i])].data = inputs[i].data.data();
  }
  auto bind = [&](ir::ValueId id) -> View {
    Slot& slot = slots[static_cast<size_t>(id)];
    const ir::Value& v = graph.value(id);
    if (slot.data == nullptr && v.kind == ir::ValueKind::constant) {
      slot.data = graph.constant_data(id).data();
    }
    CUVIL_CHECK(slot.data != nullptr, "value '" + v.name + "' read before it is computed");
    return View{slot.data, v.shape};
  };

  std::vector<int32_t> uses = graph.use_counts();
  std::vector<View> operands, op_operands;
  for (const ir::Node& node : graph.nodes()) {
    operands.clear();
    for (ir::ValueId id : node.inputs) operands.push_back(bind(id));
    // Kernels see only the op's own inputs, so an appended epilogue operand is never taken for
    // an optional one such as a bias.
    op_operands.assign(operands.begin(),
                       operands.begin() + static_cast<int64_t>(node.op_input_count()));
    const ir::Value& out_value = graph.value(node.output);
    Slot& out = slots[static_cast<size_t>(node.output)];
    out.owned.assign(static_cast<size_t>(ir::num_elements(out_value.shape)), 0.0f);
    out.data = out.owned.data();
    const OpArgs args{node, op_operands, out_value.shape, out.owned.data()};
    run_main_op(args);
    apply_epilogue(args, operands);

    // Free intermediates nobody reads any more (outputs hold a use until the end).
    for (ir::ValueId id : node.inputs) {
      if (--uses[static_cast<size_t>(id)] == 0 &&
          graph.value(id).kind == ir::ValueKind::intermediate) {
        slots[static_cast<size_t>(id)] = Slot{};
      }
    }
    if (uses[static_cast<size_t>(node.output)] == 0) out = Slot{};
  }

  std::vector<ir::Tensor> results;
  results.reserve(graph.outputs().size());
  for (ir::ValueId id : graph.outputs()) {
    const ir::Value& v = graph.value(id);
    const View view = bind(id);
    results.emplace_back(v.shape, std::vector<float>(view.data, view.data + view.numel()), v.dtype);
  }
  return results;
}

}  // namespace cuvil::runtime::reference
