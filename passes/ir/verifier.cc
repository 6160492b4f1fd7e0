#include "passes/ir/verifier.h"

#include "base/error.h"
#include "passes/ir/shape_inference.h"

namespace cuvil::ir {

void verify(const Graph& graph) {
  const int32_t n_values = graph.value_count();
  std::vector<char> defined(static_cast<size_t>(n_values), 0);
  for (ValueId id = 0; id < n_values; ++id) {
    const Value& v = graph.value(id);
    for (int64_t d : v.shape) {
      if (d < 1)
        throw UserError("value '" + v.name + "' has non-positive dimension in " +
                        to_string(v.shape));
    }
    if (v.layout == Layout::nchw16c && (v.shape.size() != 5 || v.shape[4] != kChannelBlock)) {
      throw UserError("value '" + v.name + "' is nchw16c but has shape " + to_string(v.shape) +
                      " (needs [N, C/16, H, W, 16])");
    }
    if (v.kind == ValueKind::constant) {
      if (v.data && static_cast<int64_t>(v.data->size()) != num_elements(v.shape)) {
        throw UserError("constant '" + v.name + "' holds " + std::to_string(v.data->size()) +
                        " values for shape " + to_string(v.shape));
      }
      defined[static_cast<size_t>(id)] = 1;
    }
  }
  for (ValueId in : graph.inputs()) {
    if (graph.value(in).kind != ValueKind::input)
      throw UserError("graph input '" + graph.value(in).name + "' is not an input value");
    defined[static_cast<size_t>(in)] = 1;
  }
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& node = graph.nodes()[i];
    const std::string where = "node '" + node.name + "'";
    for (ValueId in : node.inputs) {
      if (in < 0 || in >= n_values)
        throw UserError(where + " reads value id " + std::to_string(in) + ", which does not exist");
      if (!defined[static_cast<size_t>(in)]) {
        throw UserError(where + " reads '" + graph.value(in).name + "' before it is computed");
      }
    }
    if (node.output < 0 || node.output >= n_values) throw UserError(where + " has no output value");
    const Value& out = graph.value(node.output);
    if (out.kind != ValueKind::intermediate)
      throw UserError(where + " writes to input or constant '" + out.name + "'");
    if (defined[static_cast<size_t>(node.output)])
      throw UserError(where + " assigns '" + out.name + "' a second time");
    if (out.producer != static_cast<NodeId>(i))
      throw UserError(where + ": its output's producer is stale");
    Value expect = out;
    infer_node(graph, node, &expect);
    if (expect.shape != out.shape) {
      throw UserError(where + " output has shape " + to_string(out.shape) +
                      " but inference gives " + to_string(expect.shape));
    }
    defined[static_cast<size_t>(node.output)] = 1;
  }
  if (graph.outputs().empty()) throw UserError("graph has no outputs");
  for (ValueId out : graph.outputs()) {
    if (out < 0 || out >= n_values || !defined[static_cast<size_t>(out)]) {
      throw UserError("graph output id " + std::to_string(out) + " is never computed");
    }
  }
}

}  // namespace cuvil::ir
