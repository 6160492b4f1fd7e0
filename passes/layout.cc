#include "passes/layout.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "base/error.h"
#include "passes/ir/shape_inference.h"
#include "passes/select_lowering.h"
#include "runtime/cpu/conv_geometry.h"

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

bool all_ones(const Shape& shape) {
  for (int64_t d : shape) {
    if (d != 1) return false;
  }
  return true;
}

// Logical channel count of a 4-D shape held in layout `l` (nchw or nhwc).
int64_t channels_of(const Shape& shape, Layout l) {
  return l == Layout::nhwc ? shape[3] : shape[1];
}

// Which conv classes (select_lowering.h) the blocked_convs choice puts in nchw16c. Never the
// depthwise ones: the blocked kernel takes groups 1 only, and depthwise convs have their own
// NHWC kernel (the 1 -> 1 channel conv is both groups 1 and depthwise).
bool blocks_conv_class(const std::string& choice, const std::string& cls) {
  if (cls == "conv_depthwise") return false;
  if (choice == "all") return true;
  if (choice == "3x3") return cls == "conv_3x3";
  if (choice == "3x3+other") return cls == "conv_3x3" || cls == "conv_other";
  return false;
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
// layout its data now sits. Conversions are transposes (to or from nchw16c: short chains of
// concat with zeros, reshape, transpose and slice) created on demand and cached, so each value
// is converted at most once per layout.
class Rewriter {
 public:
  Rewriter(Graph& graph, Layout target, std::string blocked_convs)
      : graph_(graph), target_(target), blocked_convs_(std::move(blocked_convs)) {
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
    for (const Node& n : graph.nodes()) {
      if (ir::is_layout_aware(n.op) && n.attrs.get_string("layout", "nchw") == "nchw16c")
        throw UserError("layout: node '" + n.name + "' is already nchw16c (run layout once)");
    }
  }

  void run() {
    const size_t node_count = graph_.nodes().size();
    for (size_t i = 0; i < node_count; ++i) rewrite_node(i);
    for (ValueId& out : graph_.mutable_outputs()) out = to_original(out);
  }

  const std::set<ValueId>& inserted() const { return inserted_; }

 private:
  Layout original(ValueId v) const { return original_[static_cast<size_t>(v)]; }
  // Shape before the rewrite (logical for values that move to another layout). Values the
  // rewrite adds are logically 4-D: they hold an original 4-D value in another layout.
  Shape shape_of(ValueId v) const {
    return static_cast<size_t>(v) < shapes_.size() ? shapes_[static_cast<size_t>(v)]
                                                   : logical_[static_cast<size_t>(v)];
  }
  bool logical4(ValueId v) const { return shape_of(v).size() == 4; }

  // v's data in layout `want` (v must be logically rank 4).
  ValueId convert(ValueId v, Layout want) {
    const Layout have = phys_[static_cast<size_t>(v)];
    if (have == want) return v;
    auto key = std::make_pair(v, want);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    ValueId t;
    if (want == Layout::nchw16c) {
      t = to_blocked(v, have);
    } else if (have == Layout::nchw16c) {
      t = from_blocked(v, want);
    } else {
      const std::string suffix = want == Layout::nhwc ? ".to_nhwc" : ".to_nchw";
      t = graph_.add_node(OpKind::transpose, {v},
                          {{"perm", want == Layout::nhwc ? kToNhwc : kToNchw}},
                          graph_.value(v).name + suffix);
    }
    inserted_.insert(t);
    record(t, want, shape_of(v), original(v));
    cache_[key] = t;
    return t;
  }

  // nchw/nhwc -> nchw16c: pad channels with zeros to a multiple of 16, split them into blocks
  // and move the 16 lanes innermost.
  ValueId to_blocked(ValueId v, Layout have) {
    const Shape s = graph_.value(v).shape;
    const std::string name = graph_.value(v).name;
    const int64_t axis = have == Layout::nhwc ? 3 : 1;
    const int64_t c = s[static_cast<size_t>(axis)];
    const int64_t blocks = (c + ir::kChannelBlock - 1) / ir::kChannelBlock;
    ValueId x = v;
    if (c % ir::kChannelBlock != 0) {
      Shape zeros_shape = s;
      zeros_shape[static_cast<size_t>(axis)] = blocks * ir::kChannelBlock - c;
      const ValueId zeros = graph_.add_constant(name + ".channel_pad", zeros_shape,
                                                ir::ConstantInit::fill(0.0f), false);
      x = graph_.add_node(OpKind::concat, {x, zeros}, {{"axis", axis}}, name + ".pad16");
    }
    const bool nhwc = have == Layout::nhwc;
    const Shape split = nhwc ? Shape{s[0], s[1], s[2], blocks, ir::kChannelBlock}
                             : Shape{s[0], blocks, ir::kChannelBlock, s[2], s[3]};
    x = graph_.add_node(OpKind::reshape, {x}, {{"shape", split}}, name + ".split16");
    const std::vector<int64_t> perm =
        nhwc ? std::vector<int64_t>{0, 3, 1, 2, 4} : std::vector<int64_t>{0, 1, 3, 4, 2};
    return graph_.add_node(OpKind::transpose, {x}, {{"perm", perm}}, name + ".to_nchw16c");
  }

  // nchw16c -> nchw/nhwc: lanes back next to their blocks, merged, padding sliced off.
  ValueId from_blocked(ValueId v, Layout want) {
    const Shape s = graph_.value(v).shape;  // [N, Cb, H, W, 16]
    const std::string name = graph_.value(v).name;
    const int64_t c = channels_of(shape_of(v), original(v));
    const bool nhwc = want == Layout::nhwc;
    const std::vector<int64_t> perm =
        nhwc ? std::vector<int64_t>{0, 2, 3, 1, 4} : std::vector<int64_t>{0, 1, 4, 2, 3};
    ValueId x = graph_.add_node(OpKind::transpose, {v}, {{"perm", perm}}, name + ".unblock");
    const int64_t lanes = s[1] * s[4];
    const Shape merged = nhwc ? Shape{s[0], s[2], s[3], lanes} : Shape{s[0], lanes, s[2], s[3]};
    const std::string suffix = nhwc ? ".to_nhwc" : ".to_nchw";
    x = graph_.add_node(OpKind::reshape, {x}, {{"shape", merged}},
                        name + (lanes == c ? suffix : ".merge16"));
    if (lanes == c) return x;
    const int64_t axis = nhwc ? 3 : 1;
    return graph_.add_node(OpKind::slice, {x}, {{"axis", axis}, {"start", 0}, {"end", c}},
                           name + suffix);
  }

  ValueId to_original(ValueId v) { return logical4(v) ? convert(v, original(v)) : v; }

  // The activation input of a layout-aware node, in `layout`. The node reads its input's
  // original data in the layout its attribute names; a value tagged otherwise (an nhwc-tagged
  // permute result fed to a conv that reads it as nchw) is first re-tagged by a same-shape
  // reshape, then converted like any other value.
  ValueId activation_in(const Node& node, Layout layout) {
    const ValueId v = node.inputs[0];
    Layout reads = Layout::nchw;
    ir::parse_layout(node.attrs.get_string("layout", "nchw"), &reads);
    if (reads == Layout::any) reads = Layout::nchw;
    if (!logical4(v) || original(v) == reads) return convert(v, layout);
    auto key = std::make_pair(v, reads);
    ValueId as_read;
    if (auto it = retagged_.find(key); it != retagged_.end()) {
      as_read = it->second;
    } else {
      as_read = graph_.add_node(OpKind::reshape, {to_original(v)}, {{"shape", shape_of(v)}},
                                graph_.value(v).name + ".as_" + std::string(ir::to_string(reads)));
      inserted_.insert(as_read);
      record(as_read, reads, shape_of(v), reads);
      retagged_[key] = as_read;
    }
    return convert(as_read, layout);
  }

  // The layout a layout-aware node runs in: nchw16c for the conv classes blocked_convs names
  // (groups 1, undilated: the blocked kernel's limits) and for pools whose input arrives blocked;
  // the target layout otherwise.
  Layout node_layout(const Node& node) const {
    if (node.op == OpKind::conv2d && node.attrs.get_int("groups", 1) == 1 &&
        runtime::cpu::has_unit_dilation(node.attrs) &&
        blocks_conv_class(blocked_convs_, conv_class(graph_, node)))
      return Layout::nchw16c;
    if ((node.op == OpKind::max_pool2d || node.op == OpKind::avg_pool2d) &&
        phys_[static_cast<size_t>(node.inputs[0])] == Layout::nchw16c)
      return Layout::nchw16c;
    return target_;
  }

  // Layout tags are hints: an elementwise op or a concat combines its operands as the original
  // graph arranged them, whatever their tags (a user's permute(0, 2, 3, 1) tags its result nhwc,
  // a linear layer's result is untagged). A result moved from its original layout `logical` to
  // `phys` needs each operand moved the same way from the operand's own original arrangement:
  // none when the result stays, `phys` for an operand arranged like the result; no layout is
  // that move for an operand arranged otherwise (nullopt).
  std::optional<Layout> moved_like(ValueId v, Layout logical, Layout phys) const {
    if (phys == logical) return original(v);
    if (original(v) == logical) return phys;
    return std::nullopt;
  }
  // Whether every rank-4 operand of `node` (all but the size-1 ones) can follow a result moved
  // from `logical` to `phys`.
  bool operands_can_follow(const Node& node, Layout logical, Layout phys) const {
    for (ValueId in : node.inputs) {
      if (logical4(in) && !all_ones(shape_of(in)) && !moved_like(in, logical, phys)) return false;
    }
    return true;
  }

  // An operand that broadcasts against a result held in layout `want` (logically `logical`).
  ValueId convert_operand(ValueId v, Layout want, Layout logical) {
    const Shape shape = shape_of(v);
    if (all_ones(shape)) return v;  // one value per tensor: layout cannot matter
    if (shape.size() == 4) {
      const std::optional<Layout> to = moved_like(v, logical, want);
      CUVIL_CHECK(to.has_value(), "the result's layout was chosen so every operand can follow");
      return convert(v, *to);
    }
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
      record(r, logical, padded, logical);
      cache_[key] = r;
    }
    return convert(r, want);
  }

  // Where v's data sits; for an added value also its logical shape and that shape's layout.
  void record(ValueId v, Layout l, const Shape& logical = {},
              Layout logical_layout = Layout::nchw) {
    const size_t i = static_cast<size_t>(v);
    if (phys_.size() <= i) {
      phys_.resize(i + 1, Layout::nchw);
      original_.resize(i + 1, Layout::nchw);
      logical_.resize(i + 1);
    }
    phys_[i] = l;
    if (i >= shapes_.size()) {
      logical_[i] = logical;
      original_[i] = logical_layout;
    }
  }

  // The layout (nchw or nhwc) most of a concat's operand elements already sit in, so the fewest
  // are converted; a tie goes to the target layout (a U-Net's decoder concatenates an upsampled
  // nchw result with an nhwc skip: nhwc, which the next conv reads). Blocked operands count for
  // neither: blocked channels carry padding, so a channel concat cannot simply move axes there.
  Layout concat_layout(const Node& node) const {
    int64_t nchw = 0, nhwc = 0;
    for (ValueId in : node.inputs) {
      const Layout l = phys_[static_cast<size_t>(in)];
      const int64_t n = ir::num_elements(shape_of(in));
      if (l == Layout::nchw) nchw += n;
      if (l == Layout::nhwc) nhwc += n;
    }
    if (nchw == nhwc) return target_;
    return nchw > nhwc ? Layout::nchw : Layout::nhwc;
  }

  void rewrite_node(size_t index) {
    Node node = graph_.nodes()[index];  // a copy: add_node below appends to the node list
    std::set<int> epilogue_inputs;
    for (const ir::EpilogueStep& step : node.epilogue) {
      if (ir::is_binary_elementwise(step.op)) epilogue_inputs.insert(step.input);
    }
    const bool out4 = logical4(node.output);
    const Layout out_logical = original(node.output);
    Layout out_phys = out_logical;

    if (ir::is_layout_aware(node.op)) {
      const Layout layout = node_layout(node);
      node.inputs[0] = activation_in(node, layout);
      for (size_t k = 1; k < node.inputs.size(); ++k) {
        if (epilogue_inputs.count(static_cast<int>(k)) == 0) {
          node.inputs[k] = to_original(node.inputs[k]);
        }
      }
      node.attrs.set("layout", std::string(ir::to_string(layout)),
                     "layout.memory_layout,layout.blocked_convs");
      out_phys = layout;
    } else if ((ir::is_elementwise(node.op) || node.op == OpKind::cast) && out4) {
      // cast is elementwise too (its own kernel, not an epilogue: its dtype is its own).
      // Follow the full-size operand's layout so chains stay in the layout they arrive in,
      // where every operand can follow it.
      for (ValueId in : node.inputs) {
        if (shape_of(in) == shape_of(node.output)) {
          const Layout candidate = phys_[static_cast<size_t>(in)];
          if (operands_can_follow(node, out_logical, candidate)) out_phys = candidate;
          break;
        }
      }
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        node.inputs[k] = convert_operand(node.inputs[k], out_phys, out_logical);
      }
    } else if (node.op == OpKind::concat && out4) {
      bool same = true;
      for (ValueId in : node.inputs) same = same && logical4(in) && original(in) == out_logical;
      const Layout most = concat_layout(node);
      if (same && most != out_logical) {
        out_phys = most;
        const int64_t axis = node.attrs.get_int("axis", 0);
        node.attrs.set("axis", move_axis(axis < 0 ? axis + 4 : axis, out_logical, out_phys));
      }
      for (ValueId& in : node.inputs)
        in = out_phys == out_logical ? to_original(in) : convert(in, out_phys);
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
  std::string blocked_convs_;
  std::vector<Layout> phys_;
  std::vector<Layout> original_;
  std::vector<Shape> shapes_;
  std::vector<Shape> logical_;  // logical shapes of added values (index >= shapes_.size())
  std::map<std::pair<ValueId, Layout>, ValueId> cache_;
  std::map<std::pair<ValueId, Layout>, ValueId> retagged_;  // activation_in's re-tagged values
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

namespace {
// The CUDA lowering has no nchw16c kernels: only the CPU runs blocked convolutions.
ParamSpec blocked_convs_param() {
  ParamSpec p = choice_param("blocked_convs", {"none", "3x3", "3x3+other", "all"}, "none",
                             "conv classes (select-lowering's conv_3x3, conv_other, conv_1x1; "
                             "groups 1, never depthwise) run in blocked nchw16c with the direct "
                             "nchw16c kernel; pools after them stay blocked (CPU only)");
  p.targets = {"cpu"};
  return p;
}
}  // namespace

std::vector<ParamSpec> LayoutPass::params() const {
  return {choice_param("memory_layout", {"nchw", "nhwc"}, "nhwc",
                       "activation layout of convolutions, norms and pools (nhwc: channels "
                       "innermost, contiguous for the GEMM-style inner loops)"),
          blocked_convs_param()};
}

void LayoutPass::run(Graph& graph, const ParamMap& params) const {
  Layout target = Layout::nhwc;
  const std::string& choice = param_choice(params, "memory_layout");
  CUVIL_CHECK(ir::parse_layout(choice, &target) && target != Layout::any,
              "memory_layout '" + choice + "' passed validation");
  Rewriter rewriter(graph, target, param_choice(params, "blocked_convs"));
  rewriter.run();
  graph.recompute();
  cancel_transpose_pairs(graph);
  graph.recompute();

  int64_t inserted = 0;
  for (const Node& n : graph.nodes()) inserted += rewriter.inserted().count(n.output);
  graph.annotations["layout.transposes_inserted"] += inserted;
}

}  // namespace cuvil::passes
