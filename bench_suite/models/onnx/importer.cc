#include "bench_suite/models/onnx/importer.h"

#include <onnx/defs/attr_proto_util.h>
#include <onnx/defs/schema.h>
#include <onnx/defs/tensor_proto_util.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "base/error.h"
#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"
#include "passes/ir/shape_inference.h"
#include "passes/ir/verifier.h"

namespace cuvil::bench::onnx_import {

namespace {

// An Einsum equation with an implicit output and an upper-case label, written with its output
// (the ellipsis, then the labels used once, by character code: map_einsum's rule). Debian's
// libonnx indexes its implicit-output count by letter - 'a' and corrupts memory on upper case
// (found by fuzz_onnx: "ij,Jd" aborts, "...ij,...Jd" segfaults), so shape inference only ever
// sees explicit outputs there. Other equations pass unchanged.
std::string explicit_einsum_equation(const std::string& equation) {
  if (equation.find("->") != std::string::npos) return equation;
  std::map<char, int> uses;
  bool upper = false;
  for (const char ch : equation) {
    if (!std::isalpha(static_cast<unsigned char>(ch))) continue;
    ++uses[ch];
    upper = upper || std::isupper(static_cast<unsigned char>(ch));
  }
  if (!upper) return equation;
  std::string out = equation.find("...") != std::string::npos ? "..." : "";
  for (const auto& [ch, n] : uses)
    if (n == 1) out += ch;
  return equation + "->" + out;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s.empty() ? "(scalar)" : s;
}

// "/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1.Conv": module scopes joined with dots, a
// scope that repeats its parent's path ("layer1" then "layer1.0") replacing it, so names nest
// the way the built-in models' names do in flame graphs.
std::string dotted_name(const std::string& onnx_name) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= onnx_name.size()) {
    const size_t slash = std::min(onnx_name.find('/', start), onnx_name.size());
    const std::string part = onnx_name.substr(start, slash - start);
    if (!part.empty()) {
      if (!parts.empty() && part.rfind(parts.back() + ".", 0) == 0) {
        parts.back() = part;
      } else {
        parts.push_back(part);
      }
    }
    start = slash + 1;
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ".") + p;
  return out;
}

// The newest default-domain opset the linked libonnx knows (17 for Debian 12's 1.12). Its
// schema "at" a later opset is the op's last one up to that version.
int libonnx_max_opset() {
  const auto& range = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = range.find(onnx::ONNX_DOMAIN);
  return it == range.end() ? 0 : it->second.second;
}

// Reductions that take `axes` as an input from opset 18 (ReduceSum did from 13).
bool takes_axes_input_from_18(const std::string& op) {
  return op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd" ||
         op == "ReduceL1" || op == "ReduceL2" || op == "ReduceSumSquare" || op == "ReduceLogSum" ||
         op == "ReduceLogSumExp";
}

// A Resize that reads opset 18's `axes` attribute or a keep_aspect_ratio_policy other than
// stretch: its scales or sizes are not one per axis as given.
bool resizes_listed_axes(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.name() == "axes") return true;
    if (a.name() == "keep_aspect_ratio_policy" && a.s() != "stretch") return true;
  }
  return false;
}

bool is_integer_type(int32_t t) {
  using onnx::TensorProto;
  return t == TensorProto::INT64 || t == TensorProto::INT32 || t == TensorProto::INT16 ||
         t == TensorProto::INT8 || t == TensorProto::UINT8 || t == TensorProto::UINT16 ||
         t == TensorProto::UINT32 || t == TensorProto::BOOL;
}

}  // namespace

// The walk over the ONNX graph: a table from ONNX value names to what they are now.
class Importer {
 public:
  using Entry = ImportedValue;

  explicit Importer(const OnnxModel& model) : model_(model), source_{model.path, model.dir} {}

  ir::Graph run(const InputBinding& binding) {
    const std::string unsupported = unsupported_operators(model_);
    if (!unsupported.empty()) throw UserError(unsupported);
    const std::vector<ir::Shape> shapes = bind_input_shapes(model_, binding);
    const onnx::GraphProto& g = model_.proto->graph();

    for (const auto& t : g.initializer()) {
      Entry e;
      e.constant = decode_tensor(t, source_, "initializer '" + t.name() + "'");
      e.from_initializer = true;
      values_[t.name()] = std::move(e);
    }
    for (size_t i = 0; i < model_.inputs.size(); ++i) {
      const OnnxInput& in = model_.inputs[i];
      Entry e;
      if (is_integer_type(in.elem_type)) {
        e.id = graph_.add_input(in.name, shapes[i], ir::DType::i32);
        graph_.mutable_value(e.id).index_bound = in.elem_type == onnx::TensorProto::BOOL ? 2 : 1;
      } else if (in.elem_type == onnx::TensorProto::FLOAT) {
        e.id = graph_.add_input(in.name, shapes[i]);
      } else {
        throw UserError(model_.path + ": input '" + in.name + "' has element type " +
                        onnx_type_name(in.elem_type) +
                        ": cuvil runs float32 models with integer or bool ids (export in float32)");
      }
      values_[in.name] = std::move(e);
    }

    for_each_node(g, [&](const onnx::NodeProto& node) {
      for (const std::string& in : node.input()) {
        readers_[in].insert(node.op_type());
      }
      for (const std::string& out : node.output()) writers_[out] = node.op_type();
      for (const auto& a : node.attribute()) {
        for (const auto& out : a.g().output()) read_as_output(out.name());
        for (const auto& sub : a.graphs())
          for (const auto& out : sub.output()) read_as_output(out.name());
      }
    });
    for (const std::string& out : model_.outputs) read_as_output(out);

    // Outputs to compare with ONNX's shape inference, which runs after cuvil's own walk: that
    // walk bounds every size, while ONNX's would allocate whatever rank a malformed model's
    // shape tensors declare.
    std::vector<std::pair<int, int>> inferred;  // (node, output)
    std::vector<std::string> ir_names;          // per node
    for (const auto& node : g.node()) {
      const int index = static_cast<int>(ir_names.size());
      ir_names.push_back(unique_name(node, index, ""));
      import_node(node, ir_names.back());
      for (int k = 0; k < node.output_size(); ++k) {
        const std::string& out = node.output(k);
        if (!out.empty() && values_.count(out)) inferred.emplace_back(index, k);
      }
    }
    const std::map<std::string, ir::Shape> onnx_shapes = onnx_inferred_shapes(shapes);
    for (const auto& [n, k] : inferred) {
      const onnx::NodeProto& node = g.node(n);
      NodeContext ctx(*this, node, ir_names[static_cast<size_t>(n)]);
      check_shape(ctx, node.output(k), onnx_shapes);
    }

    for (const std::string& name : model_.outputs) {
      auto it = values_.find(name);
      if (it == values_.end()) {
        throw UserError(model_.path + ": graph output '" + name + "' is not produced by any node");
      }
      if (it->second.sequence) {
        throw UserError(model_.path + ": graph output '" + name +
                        "' is a sequence; cuvil's models return tensors (concatenate or stack "
                        "the list in the model)");
      }
      const ir::ValueId id = materialize(name, it->second);
      // Outputs keep the model's names (infer writes <name>.npy); an input or constant that is
      // also an output is copied through a reshape so that naming it renames nothing else.
      ir::ValueId out = id;
      if (graph_.value(id).kind != ir::ValueKind::intermediate || marked_.count(id)) {
        out = graph_.add_node(ir::OpKind::reshape, {id}, {{"shape", graph_.value(id).shape}},
                              name + ".output");
      }
      graph_.mutable_value(out).name = name;
      marked_.insert(out);
      graph_.mark_output(out);
    }
    set_index_bounds();
    graph_.recompute();
    ir::verify(graph_);
    return std::move(graph_);
  }

  // Maps one node (the model's, a subgraph's or one a mapping composes): its inputs must be
  // bound, its outputs that anything reads get bound.
  void import_node(const onnx::NodeProto& node, const std::string& ir_name) {
    if (++imported_nodes_ > kMaxImportedNodes) {
      throw UserError(model_.path + ": " + node_label(node, ir_name) +
                      ": importing it and its unrolled loops makes more than " +
                      std::to_string(kMaxImportedNodes) + " nodes");
    }
    for (const std::string& in : node.input()) {
      if (!in.empty() && !values_.count(in)) {
        throw UserError(model_.path + ": " + node_label(node, ir_name) + " reads '" + in +
                        "', which no earlier node, input or initializer produces (the graph "
                        "must be topologically sorted)");
      }
    }
    check_arity(node, ir_name);
    NodeContext ctx(*this, node, ir_name);
    const OpMapping* m = find_mapping(node.op_type());
    if (m == nullptr) ctx.fail("is not an operator cuvil imports");  // composed or in a subgraph
    bool all_constant = true;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      if (ctx.has_input(i) && !ctx.is_constant(i)) all_constant = false;
    }
    try {
      const bool done = m->fold && (all_constant || !m->map) && m->fold(ctx);
      if (!done) {
        if (!m->map) {
          ctx.fail(
              "can only be computed from constants and static shapes here (an input is "
              "known only at run time)");
        }
        m->map(ctx);
      }
    } catch (const ConstantError& e) {
      ctx.fail(e.what());
    }
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& out = node.output(k);
      if (!out.empty() && !values_.count(out) && used(out)) {
        ctx.fail("output " + std::to_string(k) + " ('" + out +
                 "') is read by the graph but cuvil does not compute it");
      }
    }
  }

  // A subgraph (Loop body, If branch) imported in place. Its names are bound for the walk and
  // then unbound, restoring any outer value of the same name, so that the next unrolled
  // iteration starts clean.
  std::vector<Entry> inline_graph(const NodeContext& owner, const onnx::GraphProto& body,
                                  const std::vector<Entry>& inputs, const std::string& scope) {
    if (body.input_size() != static_cast<int>(inputs.size())) {
      owner.fail("its subgraph '" + body.name() + "' takes " + std::to_string(body.input_size()) +
                 " inputs; the op passes " + std::to_string(inputs.size()));
    }
    if (++depth_ > kMaxSubgraphDepth) {
      owner.fail("subgraphs nest deeper than " + std::to_string(kMaxSubgraphDepth));
    }
    std::vector<std::pair<std::string, std::optional<Entry>>> saved;
    auto shadow = [&](const std::string& name) {
      if (name.empty()) return;
      auto it = values_.find(name);
      saved.emplace_back(name, it == values_.end() ? std::nullopt : std::optional(it->second));
    };
    for (const auto& in : body.input()) shadow(in.name());
    for (const auto& node : body.node())
      for (const std::string& out : node.output()) shadow(out);
    for (const auto& t : body.initializer()) shadow(t.name());
    for (int i = 0; i < body.input_size(); ++i) values_[body.input(i).name()] = inputs[i];
    for (const auto& t : body.initializer()) {
      Entry e;
      e.constant = decode_tensor(t, source_, "initializer '" + t.name() + "'");
      values_[t.name()] = std::move(e);
    }
    int index = 0;
    for (const auto& node : body.node()) import_node(node, unique_name(node, index++, scope));
    std::vector<Entry> outputs;
    for (const auto& out : body.output()) {
      auto it = values_.find(out.name());
      if (it == values_.end()) {
        owner.fail("its subgraph '" + body.name() + "' returns '" + out.name() +
                   "', which nothing in it or around it produces");
      }
      outputs.push_back(it->second);
    }
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second) {
        values_[it->first] = *it->second;
      } else {
        values_.erase(it->first);
      }
    }
    --depth_;
    return outputs;
  }

  // A node a mapping composes: its inputs and outputs get fresh names no model can spell.
  std::vector<Entry> import_composed(const NodeContext& owner, onnx::NodeProto node,
                                     const std::vector<Entry>& inputs, size_t outputs) {
    node.clear_input();
    node.clear_output();
    node.set_name(owner.node().name() + "/" + node.op_type());
    for (const Entry& in : inputs) {
      const std::string name = "\x01composed" + std::to_string(composed_++);
      values_[name] = in;
      node.add_input(name);
    }
    for (size_t k = 0; k < outputs; ++k) {
      const std::string name = "\x01composed" + std::to_string(composed_++);
      read_as_output(name);  // the mapping reads it back
      node.add_output(name);
    }
    import_node(node, unique_name(node, 0, ""));
    std::vector<Entry> out;
    for (const std::string& in : node.input()) values_.erase(in);
    for (const std::string& name : node.output()) {
      out.push_back(values_.at(name));
      values_.erase(name);
      readers_.erase(name);
    }
    return out;
  }

  // --- what NodeContext reaches ---
  const OnnxModel& model() const { return model_; }
  // The op types of the nodes that read `name` ("" for a graph or subgraph output), and of the
  // node that writes it ("" for inputs and initializers), anywhere in the model.
  const std::set<std::string>& readers(const std::string& name) const {
    static const std::set<std::string> none;
    auto it = readers_.find(name);
    return it == readers_.end() ? none : it->second;
  }
  std::string writer(const std::string& name) const {
    auto it = writers_.find(name);
    return it == writers_.end() ? "" : it->second;
  }
  Entry* find(const std::string& name) {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  void bind(const std::string& name, Entry e) { values_[name] = std::move(e); }
  bool used(const std::string& name) const { return readers_.count(name) != 0; }
  ir::Graph& graph() { return graph_; }

  ir::ValueId materialize(const std::string& name, Entry& e) {
    if (e.id != ir::kNoValue) return e.id;
    CUVIL_CHECK(e.constant.has_value(), "a value is either an IR value or a constant");
    e.id = constant_value(*e.constant, name, e.from_initializer);
    return e.id;
  }

  ir::ValueId constant_value(const HostTensor& t, const std::string& name, bool trainable) {
    if (t.is_float()) {
      return graph_.add_constant_data(name, ir::Tensor(t.shape, t.f), trainable && t.numel() > 1);
    }
    std::vector<float> values(t.i.size());
    for (size_t k = 0; k < t.i.size(); ++k) {
      if (std::llabs(t.i[k]) > kMaxExactInteger) {
        throw UserError(model_.path + ": integer constant '" + name + "' holds " +
                        std::to_string(t.i[k]) +
                        ", beyond the 2^24 that cuvil's fp32 storage keeps exact");
      }
      values[k] = static_cast<float>(t.i[k]);
    }
    return graph_.add_constant_data(name, ir::Tensor(t.shape, std::move(values), ir::DType::i32),
                                    false);
  }

 private:
  // The node's input and output counts against ONNX's schema of the op at the model's opset, so
  // that no mapping reads an input a malformed node lacks. Counts include empty optional names.
  void check_arity(const onnx::NodeProto& node, const std::string& ir_name) const {
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(model_.opset));
    if (schema == nullptr) return;  // not an ONNX op at this opset: the mapping table decides
    // A signature that changed after the newest opset libonnx knows: its schema is the older one.
    const bool axes_input =
        model_.opset >= 18 && libonnx_max_opset() < 18 && takes_axes_input_from_18(node.op_type());
    auto check = [&](const char* what, int count, int lo, int hi) {
      if (count >= lo && count <= hi) return;
      const std::string takes = lo == hi ? std::to_string(lo)
                                : hi == std::numeric_limits<int>::max()
                                    ? "at least " + std::to_string(lo)
                                    : std::to_string(lo) + " to " + std::to_string(hi);
      throw UserError(model_.path + ": " + node_label(node, ir_name) + " has " +
                      std::to_string(count) + " " + what + "s; " + node.op_type() + " (opset " +
                      std::to_string(model_.opset) + ") takes " + takes);
    };
    // Pad's fourth input, `axes`, is opset 18's too.
    const bool pad_axes = model_.opset >= 18 && libonnx_max_opset() < 18 && node.op_type() == "Pad";
    check("input", node.input_size(), schema->min_input(),
          axes_input ? 2
          : pad_axes ? 4
                     : schema->max_input());
    check("output", node.output_size(), schema->min_output(), schema->max_output());
  }

  std::string unique_name(const onnx::NodeProto& node, int index, const std::string& scope) {
    std::string base = dotted_name(node.name());
    if (base.empty()) base = node.op_type() + "_" + std::to_string(index);
    base += scope;
    std::string name = base;
    for (int k = 2; !names_.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    return name;
  }

  // Float initializers up to this many elements keep their data in the copy shape inference
  // sees: it reads small ones (Range's start, limit and delta, Resize's scales), and libonnx's
  // Range inference crashed on a scalar whose data had been dropped.
  static constexpr int64_t kInferenceKeepsElements = 4096;

  // ONNX's own shape inference on a copy of the model with the inputs bound (large float
  // initializers keep their type and dims but drop their data: inference never reads them).
  std::map<std::string, ir::Shape> onnx_inferred_shapes(const std::vector<ir::Shape>& shapes) {
    onnx::ModelProto copy;
    *copy.mutable_opset_import() = model_.proto->opset_import();
    copy.set_ir_version(model_.proto->ir_version());
    onnx::GraphProto* g = copy.mutable_graph();
    *g = model_.proto->graph();
    for (auto& t : *g->mutable_initializer()) {
      int64_t elements = 1;  // 0 once past the bound (or an empty or malformed dim)
      for (int64_t d : t.dims()) {
        elements = d > 0 && d <= kInferenceKeepsElements && elements <= kInferenceKeepsElements
                       ? elements * d
                       : 0;
      }
      const bool small = elements > 0 && elements <= kInferenceKeepsElements &&
                         t.data_location() != onnx::TensorProto::EXTERNAL;
      if (small) continue;
      if (t.data_type() == onnx::TensorProto::FLOAT ||
          t.data_location() == onnx::TensorProto::EXTERNAL) {
        if (t.data_type() != onnx::TensorProto::FLOAT &&
            t.data_type() != onnx::TensorProto::FLOAT16 &&
            t.data_type() != onnx::TensorProto::DOUBLE &&
            t.data_type() != onnx::TensorProto::BFLOAT16)
          continue;  // integer tensors (shapes) stay: inference may read them
        t.clear_raw_data();
        t.clear_float_data();
        t.clear_external_data();
        t.clear_data_location();
      }
    }
    std::map<std::string, size_t> input_index;
    for (size_t i = 0; i < model_.inputs.size(); ++i) input_index[model_.inputs[i].name] = i;
    for (auto& vi : *g->mutable_input()) {
      auto it = input_index.find(vi.name());
      if (it == input_index.end()) continue;
      auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
      shape->clear_dim();
      for (int64_t d : shapes[it->second]) shape->add_dim()->set_dim_value(d);
    }
    g->clear_value_info();
    // Constants the rewrite reads: initializers and Constant nodes' tensors, by name (protobuf
    // keeps repeated elements in place while the rewrite edits other nodes).
    std::map<std::string, const onnx::TensorProto*> constants;
    for (const auto& t : g->initializer()) constants[t.name()] = &t;
    for_each_node(*g, [&](const onnx::NodeProto& node) {
      if (node.op_type() != "Constant" || node.output_size() != 1) return;
      for (const auto& a : node.attribute())
        if (a.name() == "value" && a.has_t()) constants[node.output(0)] = &a.t();
    });
    rewrite_for_inference(*g, constants, model_.opset >= 18 && libonnx_max_opset() < 18);
    std::map<std::string, ir::Shape> out;
    auto collect = [&](const onnx::ValueInfoProto& vi) {
      if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
      ir::Shape s;
      for (const auto& d : vi.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value()) return;  // not static: nothing to compare
        s.push_back(d.dim_value());
      }
      out[vi.name()] = s;
    };
    // Each pass that rewrites a pool changes the shapes after it: infer again (only models with
    // such a pool pay, once per pool at most).
    do {
      out.clear();
      try {
        onnx::shape_inference::InferShapes(copy);
      } catch (const std::exception& e) {
        throw UserError(model_.path + ": ONNX shape inference failed on the bound model: " +
                        std::string(e.what()));
      }
      for (const auto& vi : g->input()) collect(vi);
      for (const auto& vi : g->value_info()) collect(vi);
      for (const auto& vi : g->output()) collect(vi);
    } while (drop_windows_in_the_padding(*g, out));
    return out;
  }

  // A ceil_mode pool's last window that would start in the end padding is dropped (the ONNX
  // specification says so, as PyTorch computes; Debian's libonnx 1.12 still counts it). The first
  // such pool whose input shape `shapes` knows is rewritten, in the copy inference reads, to the
  // floor-mode pool of the same output (end padding to its last window); true if one was.
  static bool drop_windows_in_the_padding(onnx::GraphProto& g,
                                          const std::map<std::string, ir::Shape>& shapes) {
    for (auto& node : *g.mutable_node()) {
      if ((node.op_type() != "MaxPool" && node.op_type() != "AveragePool") || node.input_size() < 1)
        continue;
      std::vector<int64_t> kernel, strides, pads;
      bool ceil_mode = false, dilated = false, auto_pad = false;
      for (const auto& a : node.attribute()) {
        if (a.name() == "kernel_shape") kernel.assign(a.ints().begin(), a.ints().end());
        if (a.name() == "strides") strides.assign(a.ints().begin(), a.ints().end());
        if (a.name() == "pads") pads.assign(a.ints().begin(), a.ints().end());
        if (a.name() == "ceil_mode") ceil_mode = a.i() != 0;
        if (a.name() == "dilations")
          dilated = std::any_of(a.ints().begin(), a.ints().end(), [](int64_t d) { return d != 1; });
        if (a.name() == "auto_pad") auto_pad = !a.s().empty() && a.s() != "NOTSET";
      }
      auto it = shapes.find(node.input(0));
      const size_t r = kernel.size();
      if (!ceil_mode || dilated || auto_pad || it == shapes.end() || it->second.size() != r + 2)
        continue;
      if (strides.empty()) strides.assign(r, 1);
      if (pads.empty()) pads.assign(2 * r, 0);
      if (strides.size() != r || pads.size() != 2 * r) continue;
      // Out-of-range windows are the importer's to refuse (naming the node); no overflow here.
      auto in_range = [](const std::vector<int64_t>& v) {
        return std::all_of(v.begin(), v.end(), [](int64_t e) { return e >= 0 && e <= (1 << 30); });
      };
      if (!in_range(kernel) || !in_range(strides) || !in_range(pads)) continue;
      bool drops = false, valid = true;
      std::vector<int64_t> floor_pads = pads;
      for (size_t d = 0; d < r && valid; ++d) {
        const int64_t in = it->second[d + 2], begin = pads[d], end = pads[d + r];
        valid = strides[d] >= 1 && in + begin + end >= kernel[d];  // else the importer refuses
        if (!valid) break;
        const int64_t span = in + begin + end - kernel[d];
        int64_t n = (span + strides[d] - 1) / strides[d] + 1;
        if ((n - 1) * strides[d] >= in + begin) {
          --n;
          drops = true;
        }
        floor_pads[d + r] = std::max<int64_t>(0, (n - 1) * strides[d] + kernel[d] - in - begin);
      }
      if (!valid || !drops) continue;
      for (auto& a : *node.mutable_attribute()) {
        if (a.name() == "ceil_mode") a.set_i(0);
        if (a.name() == "pads") {
          a.clear_ints();
          for (int64_t v : floor_pads) a.add_ints(v);
        }
      }
      bool has_pads = false;
      for (const auto& a : node.attribute()) has_pads = has_pads || a.name() == "pads";
      if (!has_pads) *node.add_attribute() = onnx::MakeAttribute("pads", floor_pads);
      // Shapes after it, the graph outputs' declared ones included, came from the old rule.
      g.clear_value_info();
      for (auto& output : *g.mutable_output()) {
        if (output.type().has_tensor_type())
          output.mutable_type()->mutable_tensor_type()->clear_shape();
      }
      return true;
    }
    return false;
  }

  // Where libonnx's inference reads a node otherwise than cuvil (and ONNX Runtime) run it, the
  // copy it sees says what runs: Einsum's implicit outputs written out (see
  // explicit_einsum_equation); SplitToSequence with keepdims 0 and a scalar `split` (PyTorch's
  // `unbind` writes split = 1) without that input, since libonnx then keeps the axis that ONNX
  // Runtime drops (the importer refuses a scalar other than 1 there); with `axes_to_attribute`
  // (an opset-18 model, a libonnx that knows only older reductions) a reduction's constant
  // `axes` input as the attribute the older schema reads, and a Pad or Resize of listed axes
  // without its pads, scales and sizes (their shapes are then the importer's alone).
  static void rewrite_for_inference(
      onnx::GraphProto& g, const std::map<std::string, const onnx::TensorProto*>& constants,
      bool axes_to_attribute) {
    auto scalar = [&](const std::string& name) {
      auto it = constants.find(name);
      return it != constants.end() && it->second->dims_size() == 0;
    };
    for (auto& node : *g.mutable_node()) {
      if (node.op_type() == "Einsum") {
        for (auto& a : *node.mutable_attribute())
          if (a.name() == "equation") a.set_s(explicit_einsum_equation(a.s()));
      }
      if (axes_to_attribute && takes_axes_input_from_18(node.op_type()) && node.input_size() == 2) {
        auto it = constants.find(node.input(1));
        const bool int64_axes = it != constants.end() &&
                                it->second->data_type() == onnx::TensorProto::INT64 &&
                                it->second->data_location() != onnx::TensorProto::EXTERNAL;
        if (node.input(1).empty() || int64_axes) {
          if (int64_axes) {
            *node.add_attribute() =
                onnx::MakeAttribute("axes", onnx::ParseData<int64_t>(it->second));
          }
          node.mutable_input()->RemoveLast();
        }
      }
      if (axes_to_attribute && node.op_type() == "Pad" && node.input_size() == 4) {
        // Pads for the listed axes only: the older schema would read them for every axis.
        node.set_input(1, "");
        node.mutable_input()->RemoveLast();
      }
      if (axes_to_attribute && node.op_type() == "Resize" && resizes_listed_axes(node)) {
        // Opset 18's `axes` and keep_aspect_ratio_policy mean nothing to the older schema, which
        // would read the scales or sizes as given for every axis: without them it infers no
        // sizes, and only the importer's own shapes hold for what follows.
        for (int i = 1; i < node.input_size(); ++i) node.set_input(i, "");
      }
      if (node.op_type() == "SplitToSequence" && node.input_size() == 2 && scalar(node.input(1))) {
        for (const auto& a : node.attribute()) {
          if (a.name() == "keepdims" && a.i() == 0) {
            node.mutable_input()->RemoveLast();
            break;
          }
        }
      }
      for (auto& a : *node.mutable_attribute()) {
        if (a.has_g()) rewrite_for_inference(*a.mutable_g(), constants, axes_to_attribute);
        for (auto& sub : *a.mutable_graphs())
          rewrite_for_inference(sub, constants, axes_to_attribute);
      }
    }
  }

  void check_shape(NodeContext& ctx, const std::string& name,
                   const std::map<std::string, ir::Shape>& onnx_shapes) {
    auto it = onnx_shapes.find(name);
    if (it == onnx_shapes.end()) return;
    Entry& e = values_.at(name);
    if (e.sequence) return;
    const ir::Shape mine = e.constant ? e.constant->shape : graph_.value(e.id).shape;
    if (mine != it->second) {
      ctx.fail("output '" + name + "': cuvil's importer infers shape " + ir::to_string(mine) +
               " but ONNX shape inference says " + ir::to_string(it->second) +
               " (please report this model)");
    }
  }

  // Integer inputs that index a table get that table's size as the bound of random ids.
  void set_index_bounds() {
    for (const ir::Node& n : graph_.nodes()) {
      ir::ValueId ids = ir::kNoValue;
      int64_t bound = 0;
      if (n.op == ir::OpKind::embedding) {
        ids = n.inputs[1];
        bound = graph_.value(n.inputs[0]).shape[0];
      } else if (n.op == ir::OpKind::gather) {
        ids = n.inputs[1];
        const ir::Shape& data = graph_.value(n.inputs[0]).shape;
        int64_t axis = n.attrs.get_int("axis", 0);
        if (axis < 0) axis += static_cast<int64_t>(data.size());
        bound = data[static_cast<size_t>(axis)];
      }
      if (ids == ir::kNoValue || graph_.value(ids).kind != ir::ValueKind::input) continue;
      ir::Value& v = graph_.mutable_value(ids);
      v.index_bound = v.index_bound > 1 ? std::min(v.index_bound, bound) : bound;
    }
  }

  void read_as_output(const std::string& name) { readers_[name].insert(""); }

  // Bounds on unrolling (a malformed or adversarial model may ask for 2^62 iterations).
  static constexpr int64_t kMaxImportedNodes = 1 << 20;
  static constexpr int kMaxSubgraphDepth = 16;

  const OnnxModel& model_;
  TensorSource source_;
  int64_t imported_nodes_ = 0;
  int64_t composed_ = 0;
  int depth_ = 0;
  ir::Graph graph_;
  std::unordered_map<std::string, Entry> values_;
  // What reads each name (op types; "" for a graph or subgraph output): a name is used when it
  // has a reader.
  std::unordered_map<std::string, std::set<std::string>> readers_;
  std::unordered_map<std::string, std::string> writers_;
  std::set<std::string> names_;
  std::set<ir::ValueId> marked_;
};

// ---------------------------------------------------------------------------------------------
// NodeContext

std::string node_label(const onnx::NodeProto& node, const std::string& ir_name) {
  if (!node.name().empty()) return "node '" + node.name() + "' (" + node.op_type() + ")";
  return "unnamed node '" + ir_name + "' (" + node.op_type() + ")";
}

NodeContext::NodeContext(Importer& importer, const onnx::NodeProto& node, std::string ir_name)
    : importer_(importer), node_(node), ir_name_(std::move(ir_name)) {}

const std::string& NodeContext::op_type() const {
  return node_.op_type();
}
int64_t NodeContext::opset() const {
  return importer_.model().opset;
}

size_t NodeContext::input_count() const {
  return static_cast<size_t>(node_.input_size());
}
bool NodeContext::has_input(size_t i) const {
  return i < input_count() && !node_.input(static_cast<int>(i)).empty();
}

bool NodeContext::is_constant(size_t i) const {
  if (!has_input(i)) return false;
  const ImportedValue* e = importer_.find(node_.input(static_cast<int>(i)));
  return e && e->constant.has_value();
}

const HostTensor& NodeContext::constant(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  if (!is_constant(i)) {
    fail("input " + std::to_string(i) + " ('" + node_.input(static_cast<int>(i)) +
         "') must be a constant or computable from static shapes; it is known only at run time");
  }
  return *importer_.find(node_.input(static_cast<int>(i)))->constant;
}

// Input i, which must be a tensor.
const ImportedValue& NodeContext::tensor_input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  const ImportedValue* e = importer_.find(node_.input(static_cast<int>(i)));
  if (e->sequence) {
    fail("input " + std::to_string(i) + " ('" + node_.input(static_cast<int>(i)) +
         "') is a sequence; " + node_.op_type() + " takes a tensor there");
  }
  return *e;
}

ir::ValueId NodeContext::value(size_t i) {
  tensor_input(i);
  const std::string& name = node_.input(static_cast<int>(i));
  return importer_.materialize(name, *importer_.find(name));
}

ir::Shape NodeContext::shape(size_t i) const {
  const ImportedValue& e = tensor_input(i);
  if (e.constant) return e.constant->shape;
  return importer_.graph().value(e.id).shape;
}

bool NodeContext::is_integer(size_t i) const {
  const ImportedValue& e = tensor_input(i);
  if (e.constant) return !e.constant->is_float();
  return importer_.graph().value(e.id).dtype == ir::DType::i32;
}

bool NodeContext::output_read_only_by(size_t k, const std::string& op_type) const {
  if (k >= output_count() || node_.output(static_cast<int>(k)).empty()) return false;
  const std::set<std::string>& readers = importer_.readers(node_.output(static_cast<int>(k)));
  return readers.size() == 1 && *readers.begin() == op_type;
}

std::string NodeContext::input_writer(size_t i) const {
  return has_input(i) ? importer_.writer(node_.input(static_cast<int>(i))) : "";
}

bool NodeContext::is_sequence(size_t i) const {
  if (!has_input(i)) return false;
  const ImportedValue* e = importer_.find(node_.input(static_cast<int>(i)));
  return e && e->sequence;
}

const std::vector<ImportedValue>& NodeContext::sequence(size_t i) const {
  if (!is_sequence(i)) {
    fail("input " + std::to_string(i) + (has_input(i) ? " is a tensor" : " is missing") + "; " +
         node_.op_type() + " takes a sequence there");
  }
  return *importer_.find(node_.input(static_cast<int>(i)))->sequence;
}

ImportedValue NodeContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return *importer_.find(node_.input(static_cast<int>(i)));
}

void NodeContext::set_output_value(size_t k, ImportedValue v) {
  if (k >= output_count()) {
    fail("declares " + std::to_string(output_count()) + " output(s); the op writes output " +
         std::to_string(k));
  }
  v.from_initializer = false;
  importer_.bind(node_.output(static_cast<int>(k)), std::move(v));
}

void NodeContext::set_sequence_output(size_t k, std::vector<ImportedValue> elements) {
  ImportedValue v;
  v.sequence = std::make_shared<const std::vector<ImportedValue>>(std::move(elements));
  set_output_value(k, std::move(v));
}

const onnx::GraphProto& NodeContext::attr_graph(const std::string& name) const {
  const auto* a = attr(name);
  if (!a || a->type() != onnx::AttributeProto::GRAPH)
    fail("attribute '" + name + "' must be a graph");
  return a->g();
}

std::vector<ImportedValue> NodeContext::inline_graph(const onnx::GraphProto& body,
                                                     const std::vector<ImportedValue>& inputs,
                                                     const std::string& scope) {
  return importer_.inline_graph(*this, body, inputs, scope);
}

std::vector<ImportedValue> NodeContext::import_composed(const onnx::NodeProto& node,
                                                        const std::vector<ImportedValue>& inputs,
                                                        size_t outputs) {
  return importer_.import_composed(*this, node, inputs, outputs);
}

const onnx::AttributeProto* NodeContext::attr(const std::string& name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

bool NodeContext::has_attr(const std::string& name) const {
  return attr(name) != nullptr;
}

int64_t NodeContext::attr_int(const std::string& name, int64_t fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INT) fail("attribute '" + name + "' must be an int");
  return a->i();
}

double NodeContext::attr_float(const std::string& name, double fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() == onnx::AttributeProto::INT) return static_cast<double>(a->i());
  if (a->type() != onnx::AttributeProto::FLOAT) fail("attribute '" + name + "' must be a float");
  return a->f();
}

std::string NodeContext::attr_string(const std::string& name, const std::string& fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::STRING) fail("attribute '" + name + "' must be a string");
  return a->s();
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name,
                                            std::vector<int64_t> fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INTS) fail("attribute '" + name + "' must be ints");
  return {a->ints().begin(), a->ints().end()};
}

std::vector<float> NodeContext::attr_floats(const std::string& name) const {
  const auto* a = attr(name);
  if (!a) return {};
  if (a->type() != onnx::AttributeProto::FLOATS) fail("attribute '" + name + "' must be floats");
  return {a->floats().begin(), a->floats().end()};
}

HostTensor NodeContext::attr_tensor(const std::string& name) const {
  const auto* a = attr(name);
  if (!a || a->type() != onnx::AttributeProto::TENSOR)
    fail("attribute '" + name + "' must be a tensor");
  return decode_tensor(a->t(), TensorSource{importer_.model().path, importer_.model().dir},
                       node_label(node_, ir_name_) + " attribute '" + name + "'");
}

size_t NodeContext::output_count() const {
  return static_cast<size_t>(node_.output_size());
}

bool NodeContext::output_used(size_t k) const {
  return k < output_count() && !node_.output(static_cast<int>(k)).empty() &&
         importer_.used(node_.output(static_cast<int>(k)));
}

void NodeContext::set_output(size_t k, ir::ValueId value) {
  // A malformed model may declare fewer outputs than the op produces: its error, not ours.
  if (k >= output_count()) {
    fail("declares " + std::to_string(output_count()) + " output(s); the op writes output " +
         std::to_string(k));
  }
  ImportedValue e;
  e.id = value;
  importer_.bind(node_.output(static_cast<int>(k)), std::move(e));
}

void NodeContext::set_constant_output(size_t k, HostTensor tensor) {
  // A malformed model may declare fewer outputs than the op produces: its error, not ours.
  if (k >= output_count()) {
    fail("declares " + std::to_string(output_count()) + " output(s); the op writes output " +
         std::to_string(k));
  }
  ImportedValue e;
  e.constant = std::move(tensor);
  importer_.bind(node_.output(static_cast<int>(k)), std::move(e));
}

ir::ValueId NodeContext::add(ir::OpKind op, std::vector<ir::ValueId> inputs, ir::Attrs attrs,
                             const std::string& suffix) {
  std::string name = ir_name_;
  if (!suffix.empty()) name += "." + suffix;
  ir::ValueId id = ir::kNoValue;
  try {
    id = importer_.graph().add_node(op, std::move(inputs), std::move(attrs), name);
  } catch (const ir::InvalidNode& e) {
    // This node already names the IR node when that has its name: the op it became is enough.
    fail(e.node() == name ? e.op() + ": " + e.detail() : e.what());
  } catch (const UserError& e) {
    fail(e.what());
  }
  // Every value stays countable in int64 (the importer's shape arithmetic relies on it).
  if (bounded_elements(value_shape(id), kMaxElements) < 0)
    fail("the result of shape " + ir::to_string(value_shape(id)) + " has more than 2^40 elements");
  return id;
}

ir::ValueId NodeContext::integer_constant(int64_t v, const std::string& suffix) {
  return constant_value(HostTensor::ints({}, {v}), suffix);
}

ir::ValueId NodeContext::float_constant(double v, const std::string& suffix) {
  return constant_value(HostTensor::floats({}, {static_cast<float>(v)}), suffix);
}

ir::ValueId NodeContext::compare(ir::ValueId a, const char* mode, ir::ValueId b,
                                 const std::string& suffix) {
  return add(ir::OpKind::compare, {a, b}, {{"mode", std::string(mode)}}, suffix);
}

ir::ValueId NodeContext::cast_to_integer(ir::ValueId v, const std::string& suffix) {
  return add(ir::OpKind::cast, {v}, {{"dtype", std::string("i32")}}, suffix);
}

ir::ValueId NodeContext::constant_value(const HostTensor& tensor, const std::string& suffix,
                                        bool parameter) {
  std::string name = ir_name_;
  name += '.';
  name += suffix;
  if (suffixes_++ > 0) {
    name += '.';
    name += std::to_string(suffixes_);
  }
  return importer_.constant_value(tensor, name, parameter);
}

ir::Graph& NodeContext::graph() {
  return importer_.graph();
}
const ir::Shape& NodeContext::value_shape(ir::ValueId id) {
  return importer_.graph().value(id).shape;
}

void NodeContext::fail(const std::string& message) const {
  throw UserError(importer_.model().path + ": " + node_label(node_, ir_name_) + ": " + message);
}

// ---------------------------------------------------------------------------------------------

const std::vector<OpMapping>& op_mappings() {
  static const std::vector<OpMapping> table = [] {
    std::vector<OpMapping> t;
    add_nn_mappings(t);
    add_elementwise_mappings(t);
    add_shape_mappings(t);
    add_einsum_mappings(t);
    add_conv_transpose_mappings(t);
    add_activation_mappings(t);
    add_recurrent_mappings(t);
    add_index_mappings(t);
    add_grid_sample_mappings(t);
    add_control_flow_mappings(t);
    add_sequence_mappings(t);
    add_quantize_mappings(t);
    add_norm_mappings(t);
    add_qoperator_mappings(t);
    return t;
  }();
  return table;
}

const OpMapping* find_mapping(const std::string& op_type) {
  for (const OpMapping& m : op_mappings()) {
    if (op_type == m.op_type) return &m;
  }
  return nullptr;
}

std::map<std::string, int64_t> operator_counts(const OnnxModel& model) {
  std::map<std::string, int64_t> counts;
  for_each_node(model.proto->graph(),
                [&](const onnx::NodeProto& node) { ++counts[node.op_type()]; });
  return counts;
}

std::string unsupported_operators(const OnnxModel& model) {
  std::map<std::string, std::pair<int64_t, std::string>> missing;
  for_each_node(model.proto->graph(), [&](const onnx::NodeProto& node) {
    if (find_mapping(node.op_type())) return;
    auto& slot = missing[node.op_type()];
    if (slot.first++ == 0) slot.second = node.name();
  });
  if (missing.empty()) return "";
  std::string list;
  for (const auto& [op, info] : missing) {
    list += (list.empty() ? "" : ", ") + op + " x" + std::to_string(info.first) +
            (info.second.empty() ? " (the first unnamed)" : " (first: node '" + info.second + "')");
  }
  return model.path + ": unsupported ONNX operators: " + list;
}

std::vector<ir::Shape> bind_input_shapes(const OnnxModel& model, const InputBinding& binding) {
  for (const auto& bound : binding.shapes) {
    const std::string& name = bound.first;  // a structured binding: clang 14 cannot capture it
    const bool known = std::any_of(model.inputs.begin(), model.inputs.end(),
                                   [&](const OnnxInput& in) { return in.name == name; });
    if (!known) {
      std::string names;
      for (const OnnxInput& in : model.inputs) names += (names.empty() ? "" : ", ") + in.name;
      throw UserError(model.path + ": --input: the model has no input '" + name +
                      "' (its inputs: " + names + ")");
    }
  }
  std::vector<ir::Shape> out;
  for (const OnnxInput& in : model.inputs) {
    ir::Shape s(in.dims.begin(), in.dims.end());
    if (auto it = binding.shapes.find(in.name); it != binding.shapes.end()) {
      if (it->second.size() != in.dims.size()) {
        throw UserError(model.path + ": --input " + in.name + ": rank " +
                        std::to_string(it->second.size()) + " given, the model's input has rank " +
                        std::to_string(in.dims.size()) + " (" + shape_text(in.dims) + ")");
      }
      for (size_t d = 0; d < s.size(); ++d) {
        if (it->second[d] < 1) {
          throw UserError(model.path + ": --input " + in.name + ": axis " + std::to_string(d) +
                          " must be >= 1");
        }
        if (in.dims[d] > 0 && in.dims[d] != it->second[d]) {
          throw UserError(model.path + ": --input " + in.name + ": axis " + std::to_string(d) +
                          " is fixed at " + std::to_string(in.dims[d]) + " in the model, " +
                          std::to_string(it->second[d]) + " given");
        }
      }
      s = it->second;
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] > 0) continue;
      const std::string& dim_name = in.dim_names[d];
      if (!dim_name.empty()) {
        if (auto it = binding.dims.find(dim_name); it != binding.dims.end()) s[d] = it->second;
      }
      if (s[d] <= 0 && d == 0) {
        if (auto it = binding.dims.find("batch"); it != binding.dims.end()) s[d] = it->second;
      }
      if (s[d] <= 0) {
        ir::Shape example = s;
        for (int64_t& v : example) v = v > 0 ? v : 1;
        throw UserError(model.path + ": input '" + in.name + "' axis " + std::to_string(d) +
                        (dim_name.empty() ? "" : " ('" + dim_name + "')") +
                        " is dynamic and unbound: bind it with --input " + in.name + ":" +
                        shape_text(example) + (d == 0 ? " or --batch N" : ""));
      }
    }
    // A batch asked of a model whose batch axis is fixed would silently run another batch.
    if (auto it = binding.dims.find("batch"); it != binding.dims.end() && !s.empty() &&
                                              in.dims[0] > 0 && in.dims[0] != it->second &&
                                              !binding.shapes.count(in.name)) {
      throw UserError(model.path + ": --batch " + std::to_string(it->second) + ": input '" +
                      in.name + "' has a fixed batch of " + std::to_string(in.dims[0]) +
                      " (export with dynamic_axes={'" + in.name + "': {0: 'batch'}} to vary it)");
    }
    if (bounded_elements(s, kMaxElements) < 0) {
      throw UserError(model.path + ": input '" + in.name + "' of shape " + ir::to_string(s) +
                      " has more than 2^40 elements");
    }
    out.push_back(std::move(s));
  }
  return out;
}

ir::Graph import_onnx(const OnnxModel& model, const InputBinding& binding) {
  return Importer(model).run(binding);
}

}  // namespace cuvil::bench::onnx_import
