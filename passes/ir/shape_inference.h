// Shape, dtype and layout inference, one rule per op (shape_inference.cc; see op.h for each op's
// contract).
#pragma once

#include <string>
#include <utility>

#include "base/error.h"
#include "passes/ir/graph.h"

namespace cuvil::ir {

// A node whose operands or attributes its op refuses: "node 'NAME' (op): detail", with the parts
// kept apart for a front end that names its nodes its own way.
class InvalidNode : public UserError {
 public:
  InvalidNode(std::string node, std::string op, std::string detail)
      : UserError("node '" + node + "' (" + op + "): " + detail),
        node_(std::move(node)),
        op_(std::move(op)),
        detail_(std::move(detail)) {}
  const std::string& node() const { return node_; }
  const std::string& op() const { return op_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string node_, op_, detail_;
};

// Infers node.output's shape, dtype and layout from its inputs and attributes; throws
// InvalidNode on bad operands.
void infer_node(const Graph& graph, const Node& node, Value* out);

}  // namespace cuvil::ir
