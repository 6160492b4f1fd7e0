#include "passes/ir/graph.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "base/error.h"
#include "passes/ir/shape_inference.h"

namespace cuvil::ir {

namespace {
thread_local AttrReadRecorder* current_recorder = nullptr;
}  // namespace

AttrReadRecorder::AttrReadRecorder() : outer_(current_recorder) {
  current_recorder = this;
}
AttrReadRecorder::~AttrReadRecorder() {
  current_recorder = outer_;
}
void AttrReadRecorder::add(const std::string& origin) {
  size_t start = 0;
  while (start <= origin.size()) {
    const size_t comma = std::min(origin.find(',', start), origin.size());
    if (comma > start) origins_.insert(origin.substr(start, comma - start));
    start = comma + 1;
  }
}

AttrReadRecorder* AttrReadRecorder::current() {
  return current_recorder;
}

void Attrs::set(const std::string& key, AttrValue value, std::string origin) {
  map_[key] = std::move(value);
  if (origin.empty()) {
    origins_.erase(key);
  } else {
    origins_[key] = std::move(origin);
  }
}

std::string Attrs::origin(const std::string& key) const {
  auto it = origins_.find(key);
  return it == origins_.end() ? std::string() : it->second;
}

void Attrs::note_read(const std::string& key) const {
  AttrReadRecorder* r = current_recorder;
  if (r == nullptr) return;
  auto it = origins_.find(key);
  if (it != origins_.end()) r->add(it->second);
}

int64_t Attrs::get_int(const std::string& key, int64_t fallback) const {
  note_read(key);
  auto it = map_.find(key);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  throw UserError("attribute '" + key + "' is not an integer");
}

double Attrs::get_float(const std::string& key, double fallback) const {
  note_read(key);
  auto it = map_.find(key);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  throw UserError("attribute '" + key + "' is not a number");
}

std::string Attrs::get_string(const std::string& key, const std::string& fallback) const {
  note_read(key);
  auto it = map_.find(key);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  throw UserError("attribute '" + key + "' is not a string");
}

std::vector<int64_t> Attrs::get_ints(const std::string& key, std::vector<int64_t> fallback) const {
  note_read(key);
  auto it = map_.find(key);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  throw UserError("attribute '" + key + "' is not a list of integers");
}

UnaryParams unary_params(OpKind op, const Attrs& attrs) {
  const auto f = [&](const char* key, double fallback) {
    return static_cast<float>(attrs.get_float(key, fallback));
  };
  switch (op) {
    case OpKind::clip:
      return {f("min", -std::numeric_limits<double>::infinity()),
              f("max", std::numeric_limits<double>::infinity())};
    case OpKind::hard_sigmoid:
      return {f("alpha", 0.2), f("beta", 0.5)};
    case OpKind::leaky_relu:
      return {f("alpha", 0.01), 0.0f};
    default:
      return {};
  }
}

CompareMode compare_mode(const Attrs& attrs) {
  const std::string mode = attrs.get_string("mode", "");
  for (CompareMode m :
       {CompareMode::equal, CompareMode::not_equal, CompareMode::less, CompareMode::less_equal,
        CompareMode::greater, CompareMode::greater_equal}) {
    if (mode == to_string(m)) return m;
  }
  throw UserError("mode '" + mode +
                  "' is not one of equal, not_equal, less, less_equal, greater, greater_equal");
}

ScatterReduction scatter_reduction(const Attrs& attrs) {
  const std::string reduction = attrs.get_string("reduction", "none");
  for (ScatterReduction r : {ScatterReduction::none, ScatterReduction::add, ScatterReduction::mul,
                             ScatterReduction::max, ScatterReduction::min}) {
    if (reduction == to_string(r)) return r;
  }
  throw UserError("reduction '" + reduction + "' is not one of none, add, mul, max, min");
}

size_t Node::op_input_count() const {
  const size_t extra = epilogue_operand_count(epilogue);
  return extra <= inputs.size() ? inputs.size() - extra : 0;
}

namespace {
// Inputs and constants hold the same bound as the results shape inference derives from them.
void check_declared_shape(const char* what, const std::string& name, const Shape& shape) {
  if (bounded_elements(shape) < 0) {
    throw UserError(std::string(what) + " '" + name + "': shape " + to_string(shape) +
                    " has a negative dimension or more than 2^40 elements");
  }
}
}  // namespace

ValueId Graph::add_value(Value value) {
  values_.push_back(std::move(value));
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId Graph::add_input(const std::string& name, Shape shape, DType dtype, Layout layout) {
  check_declared_shape("input", name, shape);
  Value v;
  v.name = name;
  v.shape = std::move(shape);
  v.dtype = dtype;
  v.layout = layout;
  v.kind = ValueKind::input;
  ValueId id = add_value(std::move(v));
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_constant(const std::string& name, Shape shape, ConstantInit init,
                            bool trainable) {
  check_declared_shape("constant", name, shape);
  Value v;
  v.name = name;
  v.shape = std::move(shape);
  v.kind = ValueKind::constant;
  v.init = init;
  v.trainable = trainable;
  return add_value(std::move(v));
}

ValueId Graph::add_constant_data(const std::string& name, Tensor tensor, bool trainable) {
  Value v;
  v.name = name;
  v.shape = std::move(tensor.shape);
  v.dtype = tensor.dtype;
  v.kind = ValueKind::constant;
  v.trainable = trainable;
  v.data = std::make_shared<const std::vector<float>>(std::move(tensor.data));
  return add_value(std::move(v));
}

ValueId Graph::add_node(OpKind op, std::vector<ValueId> inputs, Attrs attrs,
                        const std::string& name) {
  Node node;
  node.op = op;
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  node.name =
      name.empty() ? std::string(to_string(op)) + "_" + std::to_string(nodes_.size()) : name;
  for (ValueId in : node.inputs) {
    if (in < 0 || in >= value_count()) {
      throw UserError("node '" + node.name + "': input value id " + std::to_string(in) +
                      " does not exist");
    }
  }
  Value out;
  out.name = node.name;
  infer_node(*this, node, &out);
  out.producer = static_cast<NodeId>(nodes_.size());
  node.output = add_value(std::move(out));
  nodes_.push_back(std::move(node));
  return nodes_.back().output;
}

void Graph::mark_output(ValueId id) {
  CUVIL_CHECK(id >= 0 && id < value_count(), "output id out of range");
  outputs_.push_back(id);
}

const Value& Graph::value(ValueId id) const {
  CUVIL_CHECK(id >= 0 && id < value_count(), "value id " + std::to_string(id) + " out of range");
  return values_[static_cast<size_t>(id)];
}

Value& Graph::mutable_value(ValueId id) {
  CUVIL_CHECK(id >= 0 && id < value_count(), "value id " + std::to_string(id) + " out of range");
  return values_[static_cast<size_t>(id)];
}

const Node& Graph::node(NodeId id) const {
  CUVIL_CHECK(id >= 0 && id < static_cast<NodeId>(nodes_.size()), "node id out of range");
  return nodes_[static_cast<size_t>(id)];
}

std::vector<ValueId> Graph::constants() const {
  std::vector<ValueId> ids;
  for (ValueId i = 0; i < value_count(); ++i) {
    if (values_[static_cast<size_t>(i)].kind == ValueKind::constant) ids.push_back(i);
  }
  return ids;
}

const std::vector<float>& Graph::constant_data(ValueId id) const {
  const Value& v = value(id);
  CUVIL_CHECK(v.kind == ValueKind::constant, "value '" + v.name + "' is not a constant");
  if (!v.data) {
    CUVIL_CHECK(!v.released, "constant '" + v.name +
                                 "' was released after lowering (only a plan's prepared form of "
                                 "it exists) and cannot be read");
    // Lazily materialised; the cache lives in the (logically const) value.
    Value& cache = const_cast<Value&>(v);
    cache.data = materialize(v.init, num_elements(v.shape));
    cache.data_from_init = true;
  }
  return *v.data;
}

void Graph::release_constant_data(ValueId id) {
  Value& v = mutable_value(id);
  CUVIL_CHECK(v.kind == ValueKind::constant, "value '" + v.name + "' is not a constant");
  if (!v.data) return;
  if (!v.data_from_init) v.released = true;
  v.data.reset();
  v.data_from_init = false;
}

void Graph::replace_all_uses(ValueId from, ValueId to) {
  for (Node& n : nodes_) {
    for (ValueId& in : n.inputs) {
      if (in == from) in = to;
    }
  }
  for (ValueId& out : outputs_) {
    if (out == from) out = to;
  }
}

std::vector<int32_t> Graph::use_counts() const {
  std::vector<int32_t> uses(static_cast<size_t>(value_count()), 0);
  for (const Node& n : nodes_) {
    for (ValueId in : n.inputs) uses[static_cast<size_t>(in)]++;
  }
  for (ValueId out : outputs_) uses[static_cast<size_t>(out)]++;
  return uses;
}

void Graph::recompute() {
  // Drop nodes whose results are not needed by any graph output.
  std::vector<NodeId> producer(static_cast<size_t>(value_count()), -1);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    producer[static_cast<size_t>(nodes_[i].output)] = static_cast<NodeId>(i);
  }
  std::vector<char> live(nodes_.size(), 0), visiting(nodes_.size(), 0);
  std::vector<NodeId> order;
  // Iterative DFS post-order gives a topological order of the live nodes.
  std::vector<std::pair<NodeId, size_t>> stack;
  auto visit = [&](NodeId root) {
    if (root < 0 || live[static_cast<size_t>(root)]) return;
    stack.push_back({root, 0});
    visiting[static_cast<size_t>(root)] = 1;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      const Node& node = nodes_[static_cast<size_t>(n)];
      if (next < node.inputs.size()) {
        NodeId p = producer[static_cast<size_t>(node.inputs[next++])];
        if (p >= 0 && !live[static_cast<size_t>(p)]) {
          if (visiting[static_cast<size_t>(p)]) {
            throw UserError("graph has a cycle through node '" + nodes_[p].name + "'");
          }
          visiting[static_cast<size_t>(p)] = 1;
          stack.push_back({p, 0});
        }
      } else {
        live[static_cast<size_t>(n)] = 1;
        visiting[static_cast<size_t>(n)] = 0;
        order.push_back(n);
        stack.pop_back();
      }
    }
  };
  for (ValueId out : outputs_) visit(producer[static_cast<size_t>(out)]);
  std::vector<Node> sorted;
  sorted.reserve(order.size());
  for (NodeId n : order) sorted.push_back(std::move(nodes_[static_cast<size_t>(n)]));
  nodes_ = std::move(sorted);
  for (Value& v : values_) {
    if (v.kind == ValueKind::intermediate) v.producer = -1;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    Value& out = values_[static_cast<size_t>(n.output)];
    out.producer = static_cast<NodeId>(i);
    infer(n);
  }
}

void Graph::infer(Node& node) {
  Value& out = values_[static_cast<size_t>(node.output)];
  Value inferred = out;
  infer_node(*this, node, &inferred);
  out.shape = inferred.shape;
  out.dtype = inferred.dtype;
  out.layout = inferred.layout;
}

int64_t Graph::parameter_count() const {
  int64_t n = 0;
  for (const Value& v : values_) {
    if (v.kind == ValueKind::constant && v.trainable) n += num_elements(v.shape);
  }
  return n;
}

int64_t Graph::constant_bytes() const {
  int64_t n = 0;
  for (const Value& v : values_) {
    if (v.kind == ValueKind::constant) n += num_elements(v.shape) * byte_size(v.dtype);
  }
  return n;
}

std::vector<Tensor> random_inputs(const Graph& graph, uint64_t seed) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value& v = graph.value(graph.inputs()[i]);
    Tensor t(v.shape, v.dtype);
    const uint64_t s = seed * 1000003ull + i;
    if (v.dtype == DType::i32) {
      generate(ConstantInit::uniform(0.0f, 1.0f, s), 0, t.numel(), t.data.data());
      const int64_t bound = std::max<int64_t>(1, v.index_bound);
      for (float& x : t.data) {
        x = static_cast<float>(std::min<int64_t>(bound - 1, static_cast<int64_t>(x * bound)));
      }
    } else {
      generate(ConstantInit::normal(0.0f, 1.0f, s), 0, t.numel(), t.data.data());
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

}  // namespace cuvil::ir
