#include "passes/fuse_elementwise.h"

#include <algorithm>

namespace cuvil::passes {

namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;

// Ops whose result is only moved, not computed: an epilogue there saves nothing. A cast's
// result has its own dtype, which the ops after it may not keep.
bool can_produce(OpKind op) {
  switch (op) {
    case OpKind::cast:
    case OpKind::reshape:
    case OpKind::transpose:
    case OpKind::slice:
    case OpKind::concat:
    case OpKind::embedding:
    case OpKind::gather:
    case OpKind::scatter:
    case OpKind::expand:
    case OpKind::pad:
      return false;
    default:
      return true;
  }
}

bool is_commutative(OpKind op) {
  return op == OpKind::add || op == OpKind::mul;
}

// numpy broadcasting of `operand` onto `result` leaves `result`'s shape unchanged.
bool broadcasts_onto(const Shape& operand, const Shape& result) {
  if (operand.size() > result.size()) return false;
  const size_t lead = result.size() - operand.size();
  for (size_t i = 0; i < operand.size(); ++i) {
    if (operand[i] != 1 && operand[i] != result[lead + i]) return false;
  }
  return true;
}

class Fuser {
 public:
  Fuser(Graph& graph, int64_t max_depth, bool fuse_binary)
      : graph_(graph), max_depth_(max_depth), fuse_binary_(fuse_binary) {
    uses_ = graph.use_counts();
    producer_.assign(static_cast<size_t>(graph.value_count()), -1);
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
      producer_[static_cast<size_t>(graph.nodes()[i].output)] = static_cast<NodeId>(i);
    }
    is_output_.assign(static_cast<size_t>(graph.value_count()), 0);
    for (ValueId out : graph.outputs()) is_output_[static_cast<size_t>(out)] = 1;
    visited_.assign(graph.nodes().size(), 0);
  }

  // Returns how many elementwise nodes were folded into producers.
  int64_t run() {
    auto& nodes = graph_.mutable_nodes();
    std::vector<char> removed(nodes.size(), 0);
    int64_t fused = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& e = nodes[i];
      if (!ir::is_elementwise(e.op) || !e.epilogue.empty()) continue;
      if (ir::is_binary_elementwise(e.op) && !fuse_binary_) continue;
      // The running result must be the left operand; add and mul may swap theirs.
      std::vector<int> sides = {0};
      if (is_commutative(e.op)) sides.push_back(1);
      for (int side : sides) {
        if (try_fuse(static_cast<NodeId>(i), side)) {
          removed[i] = 1;
          ++fused;
          break;
        }
      }
    }
    size_t kept = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (removed[i]) continue;
      if (kept != i) nodes[kept] = std::move(nodes[i]);
      ++kept;
    }
    nodes.resize(kept);
    return fused;
  }

 private:
  bool try_fuse(NodeId e_id, int side) {
    auto& nodes = graph_.mutable_nodes();
    const Node& e = nodes[static_cast<size_t>(e_id)];
    const ValueId running = e.inputs[static_cast<size_t>(side)];
    const NodeId p_id = producer_[static_cast<size_t>(running)];
    if (p_id < 0) return false;
    Node& p = nodes[static_cast<size_t>(p_id)];
    if (!can_produce(p.op) || p.output != running) return false;
    if (uses_[static_cast<size_t>(running)] != 1 || is_output_[static_cast<size_t>(running)]) {
      return false;
    }
    if (static_cast<int64_t>(p.epilogue.size()) >= max_depth_) return false;
    const Shape& result = graph_.value(running).shape;
    if (graph_.value(e.output).shape != result) return false;

    ir::EpilogueStep step{e.op, -1, ir::unary_params(e.op, e.attrs)};
    if (ir::is_binary_elementwise(e.op)) {
      const ValueId other = e.inputs[static_cast<size_t>(1 - side)];
      if (other == running) return false;  // x op x: the value is needed twice
      if (!broadcasts_onto(graph_.value(other).shape, result)) return false;
      if (depends_on(other, p_id)) return false;
      p.inputs.push_back(other);
      step.input = static_cast<int>(p.inputs.size() - 1);
    }
    p.epilogue.push_back(step);
    p.shaped_by.insert("fuse-elementwise.max_fusion_depth");
    if (ir::is_binary_elementwise(e.op)) p.shaped_by.insert("fuse-elementwise.fuse_binary");
    // The producer now computes e's result; e's value keeps its id, users and output status.
    p.output = e.output;
    producer_[static_cast<size_t>(e.output)] = p_id;
    return true;
  }

  // Whether `value` is computed (transitively) from node `target`'s result. With a single-use
  // running value this cannot happen in a valid graph; the check keeps fusion from ever
  // creating a cycle if that reasoning is ever broken by a new op.
  bool depends_on(ValueId value, NodeId target) {
    ++stamp_;
    std::vector<ValueId> stack = {value};
    while (!stack.empty()) {
      const ValueId v = stack.back();
      stack.pop_back();
      const NodeId n = producer_[static_cast<size_t>(v)];
      if (n < 0) continue;
      if (n == target) return true;
      if (visited_[static_cast<size_t>(n)] == stamp_) continue;
      visited_[static_cast<size_t>(n)] = stamp_;
      for (ValueId in : graph_.nodes()[static_cast<size_t>(n)].inputs) stack.push_back(in);
    }
    return false;
  }

  Graph& graph_;
  int64_t max_depth_;
  bool fuse_binary_;
  std::vector<int32_t> uses_;
  std::vector<NodeId> producer_;
  std::vector<char> is_output_;
  std::vector<int32_t> visited_;
  int32_t stamp_ = 0;
};

}  // namespace

std::vector<ParamSpec> FuseElementwisePass::params() const {
  return {int_param("max_fusion_depth", 0, 8, 4,
                    "most elementwise ops folded into one producer's epilogue (0: no fusion)"),
          bool_param("fuse_binary", true,
                     "also fuse add/sub/mul/div (each adds an operand stream to the producer's "
                     "kernel); false fuses only activations")};
}

void FuseElementwisePass::run(Graph& graph, const ParamMap& params) const {
  const int64_t depth = param_int(params, "max_fusion_depth");
  int64_t fused = 0;
  if (depth > 0) fused = Fuser(graph, depth, param_bool(params, "fuse_binary")).run();
  graph.annotations["fuse-elementwise.fused"] += fused;
  if (fused > 0) graph.recompute();
}

}  // namespace cuvil::passes
