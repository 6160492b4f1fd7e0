// The graph IR: values (shape, dtype, layout), nodes (op, attributes, inputs, one output) and
// constants. The graph is the algorithm; passes change how it is computed, never what.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "passes/ir/op.h"
#include "passes/ir/tensor.h"
#include "passes/ir/types.h"

namespace cuvil::ir {

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

// Named attributes with typed getters; a missing attribute falls back to the given default.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  // A plain set clears the key's origin; with `origin` ("pass.param"), the pass parameter that
  // chose the value is recorded with it (see origin() and AttrReadRecorder).
  void set(const std::string& key, AttrValue value) {
    map_[key] = std::move(value);
    origins_.erase(key);
  }
  void set(const std::string& key, AttrValue value, std::string origin);
  bool has(const std::string& key) const {
    note_read(key);
    return map_.count(key) != 0;
  }
  void erase(const std::string& key) {
    map_.erase(key);
    origins_.erase(key);
  }
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;  // accepts an int too
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& key, std::vector<int64_t> fallback) const;
  const std::map<std::string, AttrValue>& entries() const { return map_; }
  // The "pass.param" that set `key`, or "" (set without an origin, or absent).
  std::string origin(const std::string& key) const;
  // Provenance is not part of the value: attributes compare by their entries.
  bool operator==(const Attrs& other) const { return map_ == other.map_; }

 private:
  void note_read(const std::string& key) const;
  std::map<std::string, AttrValue> map_;
  std::map<std::string, std::string> origins_;
};

// Knob reach: while a recorder is alive on a thread, every attribute with an origin that the
// thread reads (has, get_*) adds its origin here. Lowering and the executor hold one around a
// kernel's selection, prepare and first run, so a step records the pass parameters its kernel
// consumed, at the point of consumption. Recorders nest (the innermost one records).
class AttrReadRecorder {
 public:
  AttrReadRecorder();
  ~AttrReadRecorder();
  AttrReadRecorder(const AttrReadRecorder&) = delete;
  AttrReadRecorder& operator=(const AttrReadRecorder&) = delete;
  const std::set<std::string>& origins() const { return origins_; }
  // An origin may name several parameters, comma-separated ("layout.memory_layout,...").
  void add(const std::string& origin);
  static AttrReadRecorder* current();

 private:
  std::set<std::string> origins_;
  AttrReadRecorder* outer_;
};

// A unary node's constants (see UnaryParams) from its attributes, with the op's defaults.
UnaryParams unary_params(OpKind op, const Attrs& attrs);
// A compare node's relation from its attr mode; UserError naming the value when it is not one
// (shape inference checks every compare node with it).
CompareMode compare_mode(const Attrs& attrs);
// A scatter node's reduction from its attr reduction (default none); UserError naming the value
// when it is not one.
ScatterReduction scatter_reduction(const Attrs& attrs);

enum class ValueKind : uint8_t { input, constant, intermediate };

struct Value {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  Layout layout = Layout::any;
  ValueKind kind = ValueKind::intermediate;
  NodeId producer = -1;  // the node that computes it (intermediates only)

  // Constants: values come from `data` when set (e.g. folded weights), else from `init`.
  ConstantInit init;
  std::shared_ptr<const std::vector<float>> data;
  // `data` was made from `init` (Graph::constant_data), so dropping it loses nothing.
  bool data_from_init = false;
  // Graph::release_constant_data dropped values that `init` cannot make again: reading them is
  // an internal error (their only copy is a plan's prepared form).
  bool released = false;
  bool trainable = false;  // counts as a model parameter (BatchNorm running stats do not)

  // Inputs of integer type: ids are drawn from [0, index_bound) when inputs are made up.
  int64_t index_bound = 0;

  // Set by memory planning: byte offset of this intermediate in the activation arena.
  int64_t arena_offset = -1;
};

struct Node {
  OpKind op;
  std::vector<ValueId> inputs;
  ValueId output = kNoValue;
  Attrs attrs;
  std::vector<EpilogueStep> epilogue;  // fused elementwise steps applied to the result
  std::string name;
  // Pass parameters ("pass.param") that rewrote this node's structure (a recognised pattern, a
  // fused epilogue): its step's kernel consumes them by running the node at all.
  std::set<std::string> shaped_by;

  // Inputs of the op itself; epilogue operands follow them (see EpilogueStep).
  size_t op_input_count() const;
};

class Graph {
 public:
  ValueId add_input(const std::string& name, Shape shape, DType dtype = DType::f32,
                    Layout layout = Layout::any);
  ValueId add_constant(const std::string& name, Shape shape, ConstantInit init,
                       bool trainable = true);
  ValueId add_constant_data(const std::string& name, Tensor tensor, bool trainable = false);
  // Appends a node and infers its output's shape, dtype and layout. Bad operands throw
  // UserError naming the node.
  ValueId add_node(OpKind op, std::vector<ValueId> inputs, Attrs attrs = {},
                   const std::string& name = "");
  void mark_output(ValueId id);

  const Value& value(ValueId id) const;
  bool is_constant(ValueId id) const { return value(id).kind == ValueKind::constant; }
  Value& mutable_value(ValueId id);
  int32_t value_count() const { return static_cast<int32_t>(values_.size()); }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  const Node& node(NodeId id) const;
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::vector<ValueId>& mutable_outputs() { return outputs_; }
  std::vector<ValueId> constants() const;

  // The constant's values, materialised on first use and shared between copies of the graph.
  const std::vector<float>& constant_data(ValueId id) const;
  // Drops this graph's reference to the constant's values (a plan holds them in another form):
  // values made from `init` are made again on the next constant_data(); any others can no longer
  // be read from this graph (constant_data() is then an internal error, never garbage).
  void release_constant_data(ValueId id);

  // Rewiring for passes. After editing nodes, call recompute() to restore topological order,
  // producers and inferred shapes, and to drop nodes whose results nobody uses.
  void replace_all_uses(ValueId from, ValueId to);
  ValueId add_value(Value value);
  void recompute();

  // Number of uses of each value by live nodes and graph outputs.
  std::vector<int32_t> use_counts() const;
  int64_t parameter_count() const;  // elements of trainable constants
  int64_t constant_bytes() const;   // bytes of all constants at their dtype

  // Free-form facts a pass leaves for later stages and reports (e.g. "memory.peak_bytes").
  std::map<std::string, int64_t> annotations;
  // For annotations that lowering consumes for the whole plan (threads, arena offsets, ...):
  // the pass parameters that set them, by annotation key.
  std::map<std::string, std::set<std::string>> annotation_origins;
  // Plan-wide settings a pass leaves for the runtime, typed (the CUDA capture mode; the CPU
  // features the plan was compiled for): lowering copies them into runtime::Plan::settings, so
  // they live once per plan instead of on every node.
  Attrs settings;

 private:
  void infer(Node& node);
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
};

// Made-up inputs for a graph, deterministic in seed: floats ~ N(0, 1), ids in [0, index_bound).
std::vector<Tensor> random_inputs(const Graph& graph, uint64_t seed);

}  // namespace cuvil::ir
