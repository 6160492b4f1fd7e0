// What one ONNX node's mapping sees while the importer walks the graph: its inputs (constants
// known at import time, or IR values), its attributes, and the calls that build IR nodes and
// bind the node's outputs. Mappings (map_*.cc) and constant folding (fold.cc) use only this.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/host_tensor.h"
#include "passes/ir/graph.h"

namespace onnx {
class NodeProto;
class AttributeProto;
class GraphProto;
}  // namespace onnx

namespace cuvil::bench::onnx_import {

class Importer;

// How an error names an ONNX node: "node 'NAME' (OP)", or, for a node the file leaves unnamed,
// the name the importer gave it from its op and its index in its graph: "unnamed node
// 'Softmax_1' (Softmax)".
std::string node_label(const onnx::NodeProto& node, const std::string& ir_name);

// What an ONNX value name stands for while importing: an IR value, a constant known at import,
// or an ONNX sequence (a list of such values whose length is known at import: sequences exist
// only in the importer, unrolled loops build them and their elements become ordinary values).
struct ImportedValue {
  ir::ValueId id = ir::kNoValue;
  std::optional<HostTensor> constant;
  bool from_initializer = false;
  std::shared_ptr<const std::vector<ImportedValue>> sequence;  // set: a sequence

  static ImportedValue of(HostTensor t) {
    ImportedValue v;
    v.constant = std::move(t);
    return v;
  }
};

class NodeContext {
 public:
  NodeContext(Importer& importer, const onnx::NodeProto& node, std::string ir_name);

  const onnx::NodeProto& node() const { return node_; }
  const std::string& op_type() const;
  int64_t opset() const;

  // Inputs. Optional inputs may be absent (past the end or named "").
  size_t input_count() const;
  bool has_input(size_t i) const;
  bool is_constant(size_t i) const;
  const HostTensor& constant(size_t i) const;  // UserError unless is_constant(i)
  ir::ValueId value(size_t i);                 // an IR value (a constant is materialised once)
  ir::Shape shape(size_t i) const;
  bool is_integer(size_t i) const;  // int64/int32/bool data (constant or IR i32)

  // Attributes, with defaults when absent; a wrong attribute type is a UserError.
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  double attr_float(const std::string& name, double fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback) const;
  std::vector<float> attr_floats(const std::string& name) const;
  HostTensor attr_tensor(const std::string& name) const;

  // Outputs. Every output the graph uses must be bound; extra outputs (e.g. MaxPool's indices,
  // Dropout's mask) may stay unbound only while nothing reads them.
  size_t output_count() const;
  bool output_used(size_t k) const;
  // Whether every reader of output k, anywhere in the model, is an `op_type` node (a graph
  // output is no such reader); the op type of the node that wrote input i ("" for inputs and
  // initializers). For mappings that pair up (QuantizeLinear with DequantizeLinear).
  bool output_read_only_by(size_t k, const std::string& op_type) const;
  std::string input_writer(size_t i) const;
  void set_output(size_t k, ir::ValueId value);
  void set_constant_output(size_t k, HostTensor tensor);

  // Building. Node names are the ONNX node's, dotted, with `suffix` for extra nodes.
  ir::ValueId add(ir::OpKind op, std::vector<ir::ValueId> inputs, ir::Attrs attrs = {},
                  const std::string& suffix = "");
  // A new IR constant; `parameter`: it is a model weight (counted in the parameter total).
  ir::ValueId constant_value(const HostTensor& tensor, const std::string& suffix,
                             bool parameter = false);
  // Scalar constants (rank 0: they broadcast against any operand): an i32 integer, an f32 float.
  ir::ValueId integer_constant(int64_t v, const std::string& suffix);
  ir::ValueId float_constant(double v, const std::string& suffix);
  // 1 where `a mode b` holds, else 0 (IR compare; mode: equal, not_equal, less, ...).
  ir::ValueId compare(ir::ValueId a, const char* mode, ir::ValueId b, const std::string& suffix);
  // The IR's cast to i32: toward zero, saturated.
  ir::ValueId cast_to_integer(ir::ValueId v, const std::string& suffix);
  ir::Graph& graph();
  const ir::Shape& value_shape(ir::ValueId id);

  // Control flow and sequences (map_control_flow.cc, map_sequence.cc). Tensor accessors above
  // refuse a sequence input with a message naming the node.
  bool is_sequence(size_t i) const;
  const std::vector<ImportedValue>& sequence(size_t i) const;  // UserError unless a sequence
  ImportedValue input(size_t i) const;                         // whatever input i holds
  void set_output_value(size_t k, ImportedValue v);
  void set_sequence_output(size_t k, std::vector<ImportedValue> elements);
  const onnx::GraphProto& attr_graph(const std::string& name) const;
  // Imports `body` inline with its inputs bound to `inputs` (outer values stay visible, as ONNX
  // scoping says); returns its outputs. `scope` suffixes the names of the IR nodes it builds.
  std::vector<ImportedValue> inline_graph(const onnx::GraphProto& body,
                                          const std::vector<ImportedValue>& inputs,
                                          const std::string& scope);
  // Imports one ONNX node the mapping composes (`node`'s op_type and attributes; inputs and
  // outputs are named here) on `inputs`, through the same table; returns its `outputs` values.
  std::vector<ImportedValue> import_composed(const onnx::NodeProto& node,
                                             const std::vector<ImportedValue>& inputs,
                                             size_t outputs);

  [[noreturn]] void fail(const std::string& message) const;

 private:
  const onnx::AttributeProto* attr(const std::string& name) const;
  const ImportedValue& tensor_input(size_t i) const;
  Importer& importer_;
  const onnx::NodeProto& node_;
  std::string ir_name_;
  int suffixes_ = 0;
};

using MapFn = void (*)(NodeContext& node);
// Folds a node whose inputs are all constants; returns false when it cannot (then the node is
// mapped to IR with constant operands).
using FoldFn = bool (*)(NodeContext& node);

struct OpMapping {
  const char* op_type;
  MapFn map = nullptr;    // null: the op exists only as a constant computation
  FoldFn fold = nullptr;  // null: never folded
};

// The importer's table: every ONNX operator it handles (map_*.cc register theirs).
const std::vector<OpMapping>& op_mappings();
const OpMapping* find_mapping(const std::string& op_type);

// The table's parts, one per file.
void add_nn_mappings(std::vector<OpMapping>& table);              // map_nn.cc
void add_elementwise_mappings(std::vector<OpMapping>& table);     // map_elementwise.cc
void add_shape_mappings(std::vector<OpMapping>& table);           // map_shape.cc
void add_einsum_mappings(std::vector<OpMapping>& table);          // map_einsum.cc
void add_conv_transpose_mappings(std::vector<OpMapping>& table);  // map_conv_transpose.cc
void add_activation_mappings(std::vector<OpMapping>& table);      // map_activation.cc
void add_recurrent_mappings(std::vector<OpMapping>& table);       // map_recurrent.cc
void add_index_mappings(std::vector<OpMapping>& table);           // map_index.cc
void add_grid_sample_mappings(std::vector<OpMapping>& table);     // map_grid_sample.cc
void add_control_flow_mappings(std::vector<OpMapping>& table);    // map_control_flow.cc
void add_sequence_mappings(std::vector<OpMapping>& table);        // map_sequence.cc
void add_quantize_mappings(std::vector<OpMapping>& table);        // map_quantize.cc
void add_norm_mappings(std::vector<OpMapping>& table);            // map_norms.cc
void add_qoperator_mappings(std::vector<OpMapping>& table);       // map_qoperator.cc

// ScatterND and ScatterElements with run-time indices (map_index.cc): map_shape.cc's mapping
// writes constant indices itself and hands the rest here, with the reduction it read (add, mul,
// max or min; none where absent).
void map_scatter_at_run_time(NodeContext& node, std::optional<ir::OpKind> combine);

}  // namespace cuvil::bench::onnx_import
