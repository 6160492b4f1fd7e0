#include "passes/recognize_patterns.h"

#include <cmath>
#include <optional>
#include <set>

#include "base/error.h"
#include "passes/targets.h"

namespace cuvil::passes {

namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::ValueId;

class Matcher {
 public:
  explicit Matcher(Graph& graph) : g_(graph) { refresh(); }

  void refresh() {
    uses_ = g_.use_counts();
    producer_.assign(static_cast<size_t>(g_.value_count()), -1);
    for (size_t i = 0; i < g_.nodes().size(); ++i)
      producer_[static_cast<size_t>(g_.nodes()[i].output)] = static_cast<NodeId>(i);
    outputs_.assign(static_cast<size_t>(g_.value_count()), 0);
    for (ValueId o : g_.outputs()) outputs_[static_cast<size_t>(o)] = 1;
  }

  // The plain (unfused) node computing v with op `op`, or null.
  const Node* def(ValueId v, OpKind op) const {
    if (v < 0 || static_cast<size_t>(v) >= producer_.size()) return nullptr;
    const NodeId n = producer_[static_cast<size_t>(v)];
    if (n < 0) return nullptr;
    const Node& node = g_.nodes()[static_cast<size_t>(n)];
    return node.op == op && node.epilogue.empty() ? &node : nullptr;
  }
  // An intermediate whose only reader is inside the pattern.
  bool single_use(ValueId v) const {
    return uses_[static_cast<size_t>(v)] == 1 && !outputs_[static_cast<size_t>(v)];
  }
  bool uses_exactly(ValueId v, int32_t n) const {
    return uses_[static_cast<size_t>(v)] == n && !outputs_[static_cast<size_t>(v)];
  }
  // The single value of a constant with one element, if v is one.
  std::optional<double> scalar(ValueId v) const {
    const ir::Value& val = g_.value(v);
    if (val.kind != ir::ValueKind::constant || ir::num_elements(val.shape) != 1)
      return std::nullopt;
    return g_.constant_data(v)[0];
  }
  bool is_scalar(ValueId v, double want, double tol = 1e-6) const {
    const auto s = scalar(v);
    return s && std::fabs(*s - want) <= tol * std::max(1.0, std::fabs(want));
  }
  // For a binary node, the operand other than `known` (commutative ops only), or kNoValue.
  static ValueId other(const Node& n, ValueId known) {
    if (n.inputs[0] == known) return n.inputs[1];
    if (n.inputs[1] == known) return n.inputs[0];
    return ir::kNoValue;
  }
  Node& node_of(ValueId v) {
    return g_.mutable_nodes()[static_cast<size_t>(producer_[static_cast<size_t>(v)])];
  }
  // Users of v: the nodes reading it (scan; patterns are rare).
  std::vector<NodeId> users(ValueId v) const {
    std::vector<NodeId> out;
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      for (ValueId in : g_.nodes()[i].inputs) {
        if (in == v) {
          out.push_back(static_cast<NodeId>(i));
          break;
        }
      }
    }
    return out;
  }
  const Node* sole_user(ValueId v, OpKind op) const {
    if (!single_use(v)) return nullptr;
    const std::vector<NodeId> u = users(v);
    if (u.size() != 1) return nullptr;
    const Node& n = g_.nodes()[static_cast<size_t>(u[0])];
    return n.op == op && n.epilogue.empty() ? &n : nullptr;
  }

  Graph& g_;

 private:
  std::vector<int32_t> uses_;
  std::vector<NodeId> producer_;
  std::vector<char> outputs_;
};

// Rewrites the node computing `result` into `op(inputs)`; the old chain dies at recompute().
void replace(Matcher& m, ValueId result, OpKind op, std::vector<ValueId> inputs, ir::Attrs attrs) {
  Node& n = m.node_of(result);
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.epilogue.clear();
}

bool is_last_axis_mean(const Graph& g, const Node& n) {
  if (n.attrs.get_int("keepdims", 1) != 1) return false;
  const int64_t rank = static_cast<int64_t>(g.value(n.inputs[0]).shape.size());
  const auto axes = n.attrs.get_ints("axes", {});
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// ---- SiLU / HardSwish -----------------------------------------------------------------------

int64_t silu_and_hardswish(Matcher& m, bool silu, bool hardswish) {
  int64_t count = 0;
  const size_t n_nodes = m.g_.nodes().size();
  for (size_t i = 0; i < n_nodes; ++i) {
    const Node n = m.g_.nodes()[i];
    if (!n.epilogue.empty()) continue;
    if (n.op == OpKind::mul) {
      for (int side = 0; side < 2; ++side) {
        const ValueId x = n.inputs[static_cast<size_t>(side)];
        const ValueId f = n.inputs[static_cast<size_t>(1 - side)];
        if (!m.single_use(f)) continue;
        if (const Node* s = m.def(f, OpKind::sigmoid); silu && s && s->inputs[0] == x) {
          replace(m, n.output, OpKind::silu, {x}, {});
          ++count;
          break;
        }
        if (const Node* h = m.def(f, OpKind::hard_sigmoid); hardswish && h && h->inputs[0] == x) {
          const ir::UnaryParams p = ir::unary_params(OpKind::hard_sigmoid, h->attrs);
          if (std::fabs(p.a - 1.0f / 6.0f) < 1e-6f && std::fabs(p.b - 0.5f) < 1e-6f) {
            replace(m, n.output, OpKind::hard_swish, {x}, {});
            ++count;
            break;
          }
        }
      }
    } else if (hardswish && n.op == OpKind::div && m.is_scalar(n.inputs[1], 6.0)) {
      // x * clip(x + 3, 0, 6) / 6
      const Node* mul = m.def(n.inputs[0], OpKind::mul);
      if (!mul || !m.single_use(n.inputs[0])) continue;
      for (int side = 0; side < 2; ++side) {
        const ValueId x = mul->inputs[static_cast<size_t>(side)];
        const ValueId cl = mul->inputs[static_cast<size_t>(1 - side)];
        const Node* clip = m.def(cl, OpKind::clip);
        if (!clip || !m.single_use(cl)) continue;
        const ir::UnaryParams p = ir::unary_params(OpKind::clip, clip->attrs);
        const Node* add = m.def(clip->inputs[0], OpKind::add);
        if (p.a != 0.0f || p.b != 6.0f || !add || !m.single_use(clip->inputs[0])) continue;
        if (Matcher::other(*add, x) == ir::kNoValue || !m.is_scalar(Matcher::other(*add, x), 3.0))
          continue;
        replace(m, n.output, OpKind::hard_swish, {x}, {});
        ++count;
        break;
      }
    }
  }
  return count;
}

// ---- GELU -----------------------------------------------------------------------------------

int64_t gelu(Matcher& m) {
  int64_t count = 0;
  const size_t n_nodes = m.g_.nodes().size();
  for (size_t i = 0; i < n_nodes; ++i) {
    const Node e = m.g_.nodes()[i];
    if (e.op != OpKind::erf || !e.epilogue.empty() || !m.single_use(e.inputs[0])) continue;
    // erf(x / sqrt 2) or erf(x * (1 / sqrt 2))
    ValueId x = ir::kNoValue;
    if (const Node* d = m.def(e.inputs[0], OpKind::div);
        d && m.is_scalar(d->inputs[1], std::sqrt(2.0), 1e-5)) {
      x = d->inputs[0];
    } else if (const Node* mu = m.def(e.inputs[0], OpKind::mul)) {
      for (int side = 0; side < 2; ++side) {
        if (m.is_scalar(mu->inputs[static_cast<size_t>(1 - side)], std::sqrt(0.5), 1e-5))
          x = mu->inputs[static_cast<size_t>(side)];
      }
    }
    if (x == ir::kNoValue) continue;
    // a = 1 + erf(.)
    const Node* a = m.sole_user(e.output, OpKind::add);
    if (!a || !m.is_scalar(Matcher::other(*a, e.output), 1.0)) continue;
    const Node* u1 = m.sole_user(a->output, OpKind::mul);
    if (!u1) continue;
    const ValueId y = Matcher::other(*u1, a->output);
    ValueId result = ir::kNoValue;
    if (y == x) {
      // (x * a) * 0.5
      const Node* u2 = m.sole_user(u1->output, OpKind::mul);
      if (u2 && m.is_scalar(Matcher::other(*u2, u1->output), 0.5)) result = u2->output;
    } else if (const Node* half = m.def(y, OpKind::mul);
               half && m.single_use(y) && Matcher::other(*half, x) != ir::kNoValue &&
               m.is_scalar(Matcher::other(*half, x), 0.5)) {
      // (x * 0.5) * a
      result = u1->output;
    } else if (m.is_scalar(y, 0.5)) {
      // (a * 0.5) * x
      const Node* u2 = m.sole_user(u1->output, OpKind::mul);
      if (u2 && Matcher::other(*u2, u1->output) == x) result = u2->output;
    }
    if (result == ir::kNoValue) continue;
    replace(m, result, OpKind::gelu, {x}, {});
    ++count;
    m.refresh();
  }
  return count;
}

// ---- LayerNorm ------------------------------------------------------------------------------

int64_t layer_norm(Matcher& m) {
  int64_t count = 0;
  const size_t n_nodes = m.g_.nodes().size();
  for (size_t i = 0; i < n_nodes; ++i) {
    const Node mean = m.g_.nodes()[i];
    if (mean.op != OpKind::reduce_mean || !mean.epilogue.empty() || !is_last_axis_mean(m.g_, mean))
      continue;
    const ValueId x = mean.inputs[0];
    const Node* d = m.sole_user(mean.output, OpKind::sub);
    if (!d || d->inputs[0] != x || d->inputs[1] != mean.output || !m.uses_exactly(d->output, 2))
      continue;
    // var = mean(d^2)
    const Node* sq = nullptr;
    const Node* n = nullptr;
    for (NodeId u : m.users(d->output)) {
      const Node& un = m.g_.nodes()[static_cast<size_t>(u)];
      if (un.op == OpKind::pow && un.inputs[0] == d->output && m.is_scalar(un.inputs[1], 2.0))
        sq = &un;
      if (un.op == OpKind::mul && un.inputs[0] == d->output && un.inputs[1] == d->output) sq = &un;
      if (un.op == OpKind::div && un.inputs[0] == d->output) n = &un;
    }
    if (!sq || !n || !sq->epilogue.empty() || !n->epilogue.empty()) continue;
    const Node* var = m.sole_user(sq->output, OpKind::reduce_mean);
    if (!var || !is_last_axis_mean(m.g_, *var)) continue;
    const Node* add = m.sole_user(var->output, OpKind::add);
    if (!add) continue;
    const auto eps = m.scalar(Matcher::other(*add, var->output));
    if (!eps || *eps < 0) continue;
    const Node* sqrt = m.sole_user(add->output, OpKind::sqrt);
    if (!sqrt || n->inputs[1] != sqrt->output || !m.single_use(sqrt->output)) continue;
    // Optional affine: * gamma, + beta (constants of shape [D], or broadcasting to it).
    const int64_t dim = m.g_.value(x).shape.back();
    auto per_feature = [&](ValueId v) {
      const ir::Value& val = m.g_.value(v);
      if (val.kind != ir::ValueKind::constant) return false;
      for (size_t k = 0; k + 1 < val.shape.size(); ++k) {
        if (val.shape[k] != 1) return false;
      }
      return !val.shape.empty() && val.shape.back() == dim;
    };
    ValueId result = n->output, gamma = ir::kNoValue, beta = ir::kNoValue;
    if (const Node* mul = m.sole_user(result, OpKind::mul);
        mul && per_feature(Matcher::other(*mul, result))) {
      gamma = Matcher::other(*mul, result);
      result = mul->output;
    }
    if (const Node* b = m.sole_user(result, OpKind::add);
        b && per_feature(Matcher::other(*b, result))) {
      beta = Matcher::other(*b, result);
      result = b->output;
    }
    auto vector_of = [&](ValueId v, float fill, const std::string& what) {
      std::vector<float> values(static_cast<size_t>(dim), fill);
      if (v != ir::kNoValue) values = m.g_.constant_data(v);
      return m.g_.add_constant_data(m.g_.value(result).name + "." + what,
                                    ir::Tensor({dim}, std::move(values)), v != ir::kNoValue);
    };
    const ValueId g = vector_of(gamma, 1.0f, "ln_weight");
    const ValueId b = vector_of(beta, 0.0f, "ln_bias");
    m.refresh();
    replace(m, result, OpKind::layer_norm, {x, g, b}, {{"eps", *eps}});
    ++count;
    m.refresh();
  }
  return count;
}

// ---- Attention ------------------------------------------------------------------------------

// v = mul(u, c) or div(u, c) with a scalar constant c and u used only there: v becomes u and
// *scale takes the factor.
void absorb_scale(const Matcher& m, ValueId* v, double* scale) {
  for (OpKind op : {OpKind::mul, OpKind::div}) {
    const Node* n = m.def(*v, op);
    if (!n || !m.scalar(n->inputs[1]) || !m.single_use(n->inputs[0])) continue;
    const double c = *m.scalar(n->inputs[1]);
    *scale = op == OpKind::mul ? *scale * c : *scale / c;
    *v = n->inputs[0];
    return;
  }
}

int64_t attention(Matcher& m) {
  int64_t count = 0;
  const size_t n_nodes = m.g_.nodes().size();
  for (size_t i = 0; i < n_nodes; ++i) {
    const Node sm = m.g_.nodes()[i];
    if (sm.op != OpKind::softmax || !sm.epilogue.empty()) continue;
    const ir::Shape& ss = m.g_.value(sm.inputs[0]).shape;
    const int64_t rank = static_cast<int64_t>(ss.size());
    const int64_t axis = sm.attrs.get_int("axis", -1);
    if ((rank != 3 && rank != 4) || (axis != -1 && axis != rank - 1)) continue;
    // scores = matmul(q, kt) [* or / by a scalar]
    double scale = 1.0;
    ValueId scores = sm.inputs[0];
    if (!m.single_use(scores)) continue;
    absorb_scale(m, &scores, &scale);
    const Node* qk = m.def(scores, OpKind::matmul);
    const Node* pv = m.sole_user(sm.output, OpKind::matmul);
    if (!qk || !pv || pv->inputs[0] != sm.output) continue;
    ValueId q = qk->inputs[0], kt = qk->inputs[1], v = pv->inputs[1];
    const ir::Shape qs = m.g_.value(q).shape, kts = m.g_.value(kt).shape, vs = m.g_.value(v).shape;
    if (qs.size() != ss.size() || kts.size() != ss.size() || vs.size() != ss.size()) continue;
    bool same_batch = true;
    for (int64_t d = 0; d + 2 < rank; ++d) {
      same_batch = same_batch && qs[static_cast<size_t>(d)] == kts[static_cast<size_t>(d)] &&
                   qs[static_cast<size_t>(d)] == vs[static_cast<size_t>(d)];
    }
    if (!same_batch) continue;
    // A scale applied to q before the product.
    if (m.single_use(q)) absorb_scale(m, &q, &scale);
    // k = kt with its last two axes swapped; a transpose that made kt from k collapses.
    const std::string name = m.g_.value(pv->output).name;
    const ValueId result = pv->output;
    ValueId k;
    std::vector<int64_t> to_k;
    if (const Node* t = m.def(kt, OpKind::transpose); t && m.single_use(kt)) {
      std::vector<int64_t> perm = t->attrs.get_ints("perm", {});
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      bool identity = true;
      for (size_t d = 0; d < perm.size(); ++d)
        identity = identity && perm[d] == static_cast<int64_t>(d);
      k = t->inputs[0];
      if (!identity) k = m.g_.add_node(OpKind::transpose, {k}, {{"perm", perm}}, name + ".k");
    } else {
      std::vector<int64_t> perm;
      for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
      std::swap(perm[static_cast<size_t>(rank - 1)], perm[static_cast<size_t>(rank - 2)]);
      k = m.g_.add_node(OpKind::transpose, {kt}, {{"perm", perm}}, name + ".k");
    }
    auto as4 = [&](ValueId val, const char* what) {
      if (rank == 4) return val;
      ir::Shape s = m.g_.value(val).shape;
      s.insert(s.begin(), 1);
      return m.g_.add_node(OpKind::reshape, {val}, {{"shape", s}}, name + "." + what + "4d");
    };
    const ValueId q4 = as4(q, "q"), k4 = as4(k, "k"), v4 = as4(v, "v");
    const ir::Attrs attrs = {{"causal", int64_t{0}}, {"scale", scale}};
    if (rank == 4) {
      replace(m, result, OpKind::sdpa, {q4, k4, v4}, attrs);
    } else {
      const ValueId o = m.g_.add_node(OpKind::sdpa, {q4, k4, v4}, attrs, name + ".sdpa");
      replace(m, result, OpKind::reshape, {o}, {{"shape", m.g_.value(result).shape}});
    }
    ++count;
    m.refresh();
  }
  return count;
}

}  // namespace

std::vector<ParamSpec> RecognizePatternsPass::params() const {
  return {bool_param("layer_norm", true, "reduce_mean/sub/pow/sqrt/div chains become layer_norm"),
          bool_param("gelu", true, "x * 0.5 * (1 + erf(x / sqrt 2)) becomes gelu"),
          bool_param("silu", true, "x * sigmoid(x) becomes silu"),
          bool_param("hard_swish", true,
                     "x * hard_sigmoid(x) and x * clip(x + 3, 0, 6) / 6 become hard_swish"),
          bool_param("attention", true,
                     "matmul -> [scale] -> softmax -> matmul becomes sdpa (flash attention)")};
}

bool RecognizePatternsPass::applies_to(std::string_view target) const {
  return is_known_target(target);  // a graph rewrite: every target
}

void RecognizePatternsPass::run(Graph& graph, const ParamMap& params) const {
  int64_t rewrites = 0;
  // The nodes a rewrite adds (names not in the graph before it) are shaped by its parameters.
  auto step = [&](bool on, std::set<std::string> origins, auto fn) {
    if (!on) return;
    std::set<std::string> before;
    for (const Node& node : graph.nodes()) before.insert(node.name);
    Matcher m(graph);
    const int64_t n = fn(m);
    if (n > 0) graph.recompute();
    rewrites += n;
    if (n == 0) return;
    for (Node& node : graph.mutable_nodes()) {
      if (before.count(node.name) == 0) node.shaped_by.insert(origins.begin(), origins.end());
    }
  };
  step(param_bool(params, "layer_norm"), {"recognize-patterns.layer_norm"},
       [](Matcher& m) { return layer_norm(m); });
  step(param_bool(params, "gelu"), {"recognize-patterns.gelu"}, [](Matcher& m) { return gelu(m); });
  std::set<std::string> activations;
  if (param_bool(params, "silu")) activations.insert("recognize-patterns.silu");
  if (param_bool(params, "hard_swish")) activations.insert("recognize-patterns.hard_swish");
  step(!activations.empty(), activations, [&](Matcher& m) {
    return silu_and_hardswish(m, param_bool(params, "silu"), param_bool(params, "hard_swish"));
  });
  step(param_bool(params, "attention"), {"recognize-patterns.attention"},
       [](Matcher& m) { return attention(m); });
  graph.annotations["recognize-patterns.rewrites"] += rewrites;
}

}  // namespace cuvil::passes
