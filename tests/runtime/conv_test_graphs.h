// One-node conv2d graphs at odd shapes for the conv and oneDNN kernel tests (nchw, nhwc and
// blocked nchw16c activations).
#pragma once

#include <string>
#include <vector>

#include "passes/ir/graph.h"

namespace cuvil::runtime::testing {

struct ConvCase {
  int64_t n, c, h, w, o, k, stride, pad, groups;
  bool bias;
};

// Every field, for a failing check's message.
inline std::string describe(const ConvCase& cc) {
  return "n=" + std::to_string(cc.n) + " c=" + std::to_string(cc.c) + " h=" + std::to_string(cc.h) +
         " w=" + std::to_string(cc.w) + " o=" + std::to_string(cc.o) +
         " k=" + std::to_string(cc.k) + " stride=" + std::to_string(cc.stride) +
         " pad=" + std::to_string(cc.pad) + " groups=" + std::to_string(cc.groups) +
         " bias=" + std::to_string(cc.bias);
}

// Channels 3, 7, 17; spatial 1, 5, 9; strides 1 and 2; grouped; 1x1, 3x3, 7x7; wide outputs.
inline const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {1, 3, 9, 9, 17, 3, 1, 1, 1, true},    {2, 7, 5, 5, 7, 3, 2, 1, 1, false},
      {1, 17, 1, 1, 33, 1, 1, 0, 1, true},   {1, 6, 9, 7, 4, 3, 1, 0, 2, true},
      {1, 3, 17, 17, 9, 7, 2, 3, 1, true},   {2, 7, 5, 9, 70, 1, 1, 0, 1, false},
      {1, 17, 9, 9, 40, 1, 2, 0, 1, true},   {1, 12, 5, 6, 9, 3, 1, 1, 3, false},
      {1, 16, 30, 31, 64, 3, 1, 1, 1, true}, {1, 5, 1, 1, 3, 3, 1, 1, 1, true},
  };
  return cases;
}

inline ir::Shape conv_input_shape(const ConvCase& cc, const std::string& layout) {
  if (layout == "nchw16c") return {cc.n, (cc.c + 15) / 16, cc.h, cc.w, 16};
  return layout == "nhwc" ? ir::Shape{cc.n, cc.h, cc.w, cc.c} : ir::Shape{cc.n, cc.c, cc.h, cc.w};
}

// conv(x, w[, b]); weights are a constant unless `weights_input`; `epilogue` adds relu and a
// full-size residual add as fused epilogue steps; `dilation` (when given) dilates the window.
inline ir::Graph conv_graph(const ConvCase& cc, const std::string& layout, bool weights_input,
                            bool epilogue, const std::vector<int64_t>& dilation = {}) {
  ir::Graph g;
  using Ints = std::vector<int64_t>;
  const ir::Shape ws = {cc.o, cc.c / cc.groups, cc.k, cc.k};
  std::vector<ir::ValueId> in = {g.add_input("x", conv_input_shape(cc, layout))};
  in.push_back(weights_input ? g.add_input("w", ws)
                             : g.add_constant("w", ws, ir::ConstantInit::normal(0, 0.5f, 1)));
  if (cc.bias) in.push_back(g.add_constant("b", {cc.o}, ir::ConstantInit::normal(0, 0.5f, 2)));
  ir::Attrs a{{"stride", Ints{cc.stride, cc.stride}},
              {"pad", Ints{cc.pad, cc.pad}},
              {"groups", cc.groups},
              {"layout", layout}};
  if (!dilation.empty()) a.set("dilation", dilation);
  const ir::ValueId y = g.add_node(ir::OpKind::conv2d, in, a, "conv");
  g.mark_output(y);
  if (epilogue) {
    const ir::ValueId residual = g.add_input("residual", g.value(y).shape);
    ir::Node& conv = g.mutable_nodes()[0];
    conv.inputs.push_back(residual);
    conv.epilogue = {{ir::OpKind::relu, -1},
                     {ir::OpKind::add, static_cast<int>(conv.inputs.size() - 1)}};
    g.recompute();
  }
  return g;
}

// One step of a fused epilogue for with_epilogue(): a unary op with its constants, or a binary
// op whose operand (a graph input of random values) has shape `operand`.
struct EpilogueCase {
  ir::OpKind op;
  ir::Shape operand = {};
  ir::UnaryParams params = {};
};

// The last node of g with `steps` fused as its epilogue (after any it has).
inline void with_epilogue(ir::Graph& g, const std::vector<EpilogueCase>& steps) {
  std::vector<ir::EpilogueStep> epilogue;
  std::vector<ir::ValueId> operands;
  for (const EpilogueCase& e : steps) {
    ir::EpilogueStep step{e.op, -1, e.params};
    if (!e.operand.empty()) {
      const ir::ValueId v = g.add_input("operand" + std::to_string(g.inputs().size()), e.operand);
      step.input = static_cast<int>(g.nodes().back().inputs.size() + operands.size());
      operands.push_back(v);
    }
    epilogue.push_back(step);
  }
  ir::Node& node = g.mutable_nodes().back();
  node.inputs.insert(node.inputs.end(), operands.begin(), operands.end());
  node.epilogue.insert(node.epilogue.end(), epilogue.begin(), epilogue.end());
  g.recompute();
}

// Epilogues of every kind of step a register tile applies (Epilogue::lanes()), and two it cannot
// (an op and an operand broadcast without a lane form), for an output of shape `out`
// ([..., channels]).
inline std::vector<std::vector<EpilogueCase>> lane_epilogue_cases(const ir::Shape& out) {
  using ir::OpKind;
  ir::Shape per_row = out;
  per_row.back() = 1;
  const ir::Shape column = {out.back()}, scalar = {1};
  return {
      {{OpKind::add, column}, {OpKind::clip, {}, {-0.5f, 0.75f}}, {OpKind::mul, scalar}},
      {{OpKind::sub, out}, {OpKind::leaky_relu, {}, {0.1f, 0.0f}}, {OpKind::div, column}},
      {{OpKind::mul, column}, {OpKind::add, out}, {OpKind::relu}},
      {{OpKind::sigmoid}, {OpKind::add, out}},   // no lane form: sigmoid
      {{OpKind::add, per_row}, {OpKind::relu}},  // no lane form: a per-pixel operand
  };
}

}  // namespace cuvil::runtime::testing
