#include "passes/layout.h"

#include <map>
#include <set>

#include "passes/ir/error.h"

namespace cuvil::passes {

namespace {

using ir::Graph;
using ir::Layout;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

bool is_rank4(const Graph& graph, ValueId id) {
  return graph.value(id).shape.size() == 4;
}

bool all_ones(const Shape& shape) {
  for (int64_t d : shape) {
    if (d != 1) return false;
  }
  return true;
}

// Where logical axis `axis` of a tensor in layout `from` sits in layout `to`.
int64_t move_axis(int64_t axis, Layout from, Layout to) {
  if (from == to) return axis;
  const std::vector<int64_t>& perm = to == Layout::nhwc ? kToNhwc : kToNchw;
  for (int64_t i = 0; i < 4; ++i) {
    if (perm[static_cast<size_t>(i)] == axis) return i;
  }
  return axis;
}

// Rewrites the graph in place. Every original value keeps its id; `phys_[v]` says in which
// layout its data now sits. Conversions are transposes created on demand and cached, so each
// value is transposed at most once per layout.
class Rewriter {
 public:
  Rewriter(Graph& graph, Layout target) : graph_(graph), target_(target) {
    phys_.resize(static_cast<size_t>(graph.value_count()), Layout::nchw);
    for (ValueId v = 0; v < graph.value_count(); ++v) {
      const Layout l = graph.value(v).layout;
      phys_[static_cast<size_t>(v)] = l == Layout::any ? Layout::nchw : l;
    }
    // An untagged value read by a layout-aware op is in that op's layout.
    for (const Node& n : graph.nodes()) {
      if (!ir::is_layout_aware(n.op) || graph.value(n.inputs[0]).layout != Layout::any) continue;
      Layout l = Layout::nchw;
      ir::parse_layout(n.attrs.get_string("layout", "nchw"), &l);
      phys_[static_cast<size_t>(n.inputs[0])] = l == Layout::any ? Layout::nchw : l;
    }
    original_ = phys_;
    for (ValueId v = 0; v < graph.value_count(); ++v) shapes_.push_back(graph.value(v).shape);
  }

  void run() {
    const size_t node_count = graph_.nodes().size();
    for (size_t i = 0; i < node_count; ++i) rewrite_node(i);
    for (ValueId& out : graph_.mutable_outputs()) out = to_original(out);
  }

  const std::set<ValueId>& inserted() const { return inserted_; }

 private:
  Layout original(ValueId v) const { return original_[static_cast<size_t>(v)]; }
  // Shape before the rewrite (logical for values that move to another layout).
  const Shape& shape_of(ValueId v) const { return shapes_[static_cast<size_t>(v)]; }

  // v's data in layout `want` (v must be rank 4).
  ValueId convert(ValueId v, Layout want) {
    const Layout have = phys_[static_cast<size_t>(v)];
    if (have == want) return v;
    auto key = std::make_pair(v, want);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const std::string suffix = want == Layout::nhwc ? ".to_nhwc" : ".to_nchw";
    const ValueId t = graph_.add_node(OpKind::transpose, {v},
                                      {{"perm", want == Layout::nhwc ? kToNhwc : kToNchw}},
                                      graph_.value(v).name + suffix);
    inserted_.insert(t);
    record(t, want);
    cache_[key] = t;
    return t;
  }

  ValueId to_original(ValueId v) { return is_rank4(graph_, v) ? convert(v, original(v)) : v; }

  // An operand that broadcasts against a result held in layout `want` (logically `logical`).
  ValueId convert_operand(ValueId v, Layout want, Layout logical) {
    const Shape shape = graph_.value(v).shape;
    if (all_ones(shape)) return v;  // one value per tensor: layout cannot matter
    if (shape.size() == 4) return convert(v, want);
    if (shape.size() > 4 || want == logical) return v;
    // A lower-rank operand aligns to the trailing axes of the logical layout: make it rank 4
    // in that layout first, then move it like any other tensor.
    auto key = std::make_pair(v, Layout::any);
    ValueId r;
    if (auto it = cache_.find(key); it != cache_.end()) {
      r = it->second;
    } else {
      Shape padded(4 - shape.size(), 1);
      padded.insert(padded.end(), shape.begin(), shape.end());
      r = graph_.add_node(OpKind::reshape, {v}, {{"shape", padded}},
                          graph_.value(v).name + ".rank4");
      record(r, logical);
      original_[static_cast<size_t>(r)] = logical;
      cache_[key] = r;
    }
    return convert(r, want);
  }

  void record(ValueId v, Layout l) {
    if (phys_.size() <= static_cast<size_t>(v)) {
      phys_.resize(static_cast<size_t>(v) + 1, Layout::nchw);
      original_.resize(static_cast<size_t>(v) + 1, Layout::nchw);
    }
    phys_[static_cast<size_t>(v)] = l;
  }

  void rewrite_node(size_t index) {
    Node node = graph_.nodes()[index];  // a copy: add_node below appends to the node list
    std::set<int> epilogue_inputs;
    for (const ir::EpilogueStep& step : node.epilogue) {
      if (ir::is_binary_elementwise(step.op)) epilogue_inputs.insert(step.input);
    }
    const bool out4 = is_rank4(graph_, node.output);
    const Layout out_logical = original(node.output);
    Layout out_phys = out_logical;

    if (ir::is_layout_aware(node.op)) {
      node.inputs[0] = convert(node.inputs[0], target_);
      for (size_t k = 1; k < node.inputs.size(); ++k) {
        if (epilogue_inputs.count(static_cast<int>(k)) == 0) {
          node.inputs[k] = to_original(node.inputs[k]);
        }
      }
      node.attrs.set("layout", std::string(ir::to_string(target_)));
      out_phys = target_;
    } else if (ir::is_elementwise(node.op) && out4) {
      // Follow the full-size operand's layout so chains stay in the layout they arrive in.
      for (ValueId in : node.inputs) {
        if (shape_of(in) == shape_of(node.output)) {
          out_phys = phys_[static_cast<size_t>(in)];
          break;
        }
      }
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        node.inputs[k] = convert_operand(node.inputs[k], out_phys, out_logical);
      }
    } else if (node.op == OpKind::concat && out4) {
      const Layout first = phys_[static_cast<size_t>(node.inputs[0])];
      bool same = true;
      for (ValueId in : node.inputs) same = same && is_rank4(graph_, in);
      if (same && first != out_logical) {
        out_phys = first;
        const int64_t axis = node.attrs.get_int("axis", 0);
        node.attrs.set("axis", move_axis(axis < 0 ? axis + 4 : axis, out_logical, out_phys));
      }
      for (ValueId& in : node.inputs) in = convert(in, out_phys);
    } else {
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        if (epilogue_inputs.count(static_cast<int>(k)) == 0) {
          node.inputs[k] = to_original(node.inputs[k]);
        }
      }
    }
    // Fused epilogue operands broadcast against the result, wherever it now lives.
    for (int k : epilogue_inputs) {
      const size_t ks = static_cast<size_t>(k);
      node.inputs[ks] = out4 ? convert_operand(node.inputs[ks], out_phys, out_logical)
                             : to_original(node.inputs[ks]);
    }

    graph_.mutable_nodes()[index] = node;
    // Later conversions read this value's shape before recompute(): refresh it now.
    ir::Value inferred = graph_.value(node.output);
    ir::infer_node(graph_, node, &inferred);
    ir::Value& out = graph_.mutable_value(node.output);
    out.shape = inferred.shape;
    out.layout = inferred.layout;
    record(node.output, out4 ? out_phys : out_logical);
  }

  Graph& graph_;
  Layout target_;
  std::vector<Layout> phys_;
  std::vector<Layout> original_;
  std::vector<Shape> shapes_;
  std::map<std::pair<ValueId, Layout>, ValueId> cache_;
  std::set<ValueId> inserted_;
};

std::vector<int64_t> compose(const std::vector<int64_t>& first,
                             const std::vector<int64_t>& second) {
  std::vector<int64_t> out(second.size());
  for (size_t i = 0; i < second.size(); ++i) out[i] = first[static_cast<size_t>(second[i])];
  return out;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// transpose(transpose(x, p1), p2) becomes transpose(x, p1∘p2), or x itself when that is the
// identity. Nodes are in topological order, so chains collapse front to back.
void cancel_transpose_pairs(Graph& graph) {
  std::vector<ir::NodeId> producer(static_cast<size_t>(graph.value_count()), -1);
  auto& nodes = graph.mutable_nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    producer[static_cast<size_t>(nodes[i].output)] = static_cast<ir::NodeId>(i);
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node& outer = nodes[i];
    if (outer.op != OpKind::transpose || !outer.epilogue.empty()) continue;
    const ir::NodeId p = producer[static_cast<size_t>(outer.inputs[0])];
    if (p < 0) continue;
    const Node& inner = nodes[static_cast<size_t>(p)];
    if (inner.op != OpKind::transpose || !inner.epilogue.empty()) continue;
    const auto perm = compose(inner.attrs.get_ints("perm", {}), outer.attrs.get_ints("perm", {}));
    outer.inputs[0] = inner.inputs[0];
    outer.attrs.set("perm", perm);
    if (is_identity(perm)) graph.replace_all_uses(outer.output, inner.inputs[0]);
  }
}

}  // namespace

std::vector<ParamSpec> LayoutPass::params() const {
  return {choice_param("memory_layout", {"nchw", "nhwc"}, "nhwc",
                       "activation layout of convolutions, norms and pools (nhwc: channels "
                       "innermost, contiguous for the GEMM-style inner loops)")};
}

void LayoutPass::run(Graph& graph, const ParamMap& params) const {
  Layout target = Layout::nhwc;
  const std::string& choice = param_choice(params, "memory_layout");
  CUVIL_CHECK(ir::parse_layout(choice, &target) && target != Layout::any,
              "memory_layout '" + choice + "' passed validation");
  Rewriter rewriter(graph, target);
  rewriter.run();
  graph.recompute();
  cancel_transpose_pairs(graph);
  graph.recompute();

  int64_t inserted = 0;
  for (const Node& n : graph.nodes()) inserted += rewriter.inserted().count(n.output);
  graph.annotations["layout.transposes_inserted"] += inserted;
}

}  // namespace cuvil::passes
