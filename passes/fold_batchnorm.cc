#include "passes/fold_batchnorm.h"

#include <cmath>

namespace cuvil::passes {

namespace {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::ValueId;

bool is_constant(const Graph& graph, ValueId id) {
  return graph.value(id).kind == ir::ValueKind::constant;
}

bool is_graph_output(const Graph& graph, ValueId id) {
  for (ValueId out : graph.outputs()) {
    if (out == id) return true;
  }
  return false;
}

// The conv node feeding batch_norm `bn`, when folding is safe; -1 otherwise.
int foldable_conv(const Graph& graph, const Node& bn, const std::vector<int32_t>& uses) {
  const ValueId x = bn.inputs[0];
  const ir::NodeId p = graph.value(x).producer;
  if (p < 0 || uses[static_cast<size_t>(x)] != 1 || is_graph_output(graph, x)) return -1;
  const Node& conv = graph.node(p);
  if (conv.op != OpKind::conv2d || conv.output != x || !conv.epilogue.empty()) return -1;
  if (!bn.epilogue.empty()) return -1;
  if (conv.attrs.get_string("layout", "nchw") != bn.attrs.get_string("layout", "nchw")) return -1;
  for (size_t i = 1; i < conv.inputs.size(); ++i) {
    if (!is_constant(graph, conv.inputs[i])) return -1;
  }
  for (size_t i = 1; i < bn.inputs.size(); ++i) {
    if (!is_constant(graph, bn.inputs[i])) return -1;
  }
  return p;
}

}  // namespace

void FoldBatchNormPass::run(Graph& graph, const ParamMap& /*params*/) const {
  std::vector<int32_t> uses = graph.use_counts();
  int64_t folded = 0;
  const size_t node_count = graph.nodes().size();
  for (size_t i = 0; i < node_count; ++i) {
    const Node bn = graph.nodes()[i];  // a copy: adding constants below may move things
    if (bn.op != OpKind::batch_norm) continue;
    const int conv_id = foldable_conv(graph, bn, uses);
    if (conv_id < 0) continue;
    const Node conv = graph.node(conv_id);

    const ValueId w_id = conv.inputs[1];
    const ir::Shape w_shape = graph.value(w_id).shape;
    const int64_t out_channels = w_shape[0];
    const int64_t per_channel = ir::num_elements(w_shape) / out_channels;
    const std::vector<float>& w = graph.constant_data(w_id);
    const std::vector<float>& gamma = graph.constant_data(bn.inputs[1]);
    const std::vector<float>& beta = graph.constant_data(bn.inputs[2]);
    const std::vector<float>& mean = graph.constant_data(bn.inputs[3]);
    const std::vector<float>& var = graph.constant_data(bn.inputs[4]);
    const double eps = bn.attrs.get_float("eps", 1e-5);

    // y = (conv(x) + b - mean) * gamma / sqrt(var + eps) + beta, per output channel.
    std::vector<float> new_w(w.size());
    std::vector<float> new_b(static_cast<size_t>(out_channels));
    for (int64_t o = 0; o < out_channels; ++o) {
      const size_t oc = static_cast<size_t>(o);
      const double scale = gamma[oc] / std::sqrt(static_cast<double>(var[oc]) + eps);
      for (int64_t k = 0; k < per_channel; ++k) {
        const size_t idx = static_cast<size_t>(o * per_channel + k);
        new_w[idx] = static_cast<float>(w[idx] * scale);
      }
      const double bias = conv.inputs.size() == 3 ? graph.constant_data(conv.inputs[2])[oc] : 0.0;
      new_b[oc] = static_cast<float>((bias - mean[oc]) * scale + beta[oc]);
    }

    // New constants: the originals may be shared with other graph copies.
    const bool trainable = graph.value(w_id).trainable;
    const ir::DType w_dtype = graph.value(w_id).dtype;
    const ValueId folded_w = graph.add_constant_data(
        conv.name + ".w_bn_folded", ir::Tensor(w_shape, std::move(new_w), w_dtype), trainable);
    const ValueId folded_b = graph.add_constant_data(
        conv.name + ".b_bn_folded", ir::Tensor({out_channels}, std::move(new_b)), trainable);

    Node& conv_node = graph.mutable_nodes()[static_cast<size_t>(conv_id)];
    conv_node.inputs = {conv.inputs[0], folded_w, folded_b};
    graph.replace_all_uses(bn.output, conv.output);
    // The conv's result now has the BN's users; a later BN reading it sees the true count.
    uses[static_cast<size_t>(conv.output)] = uses[static_cast<size_t>(bn.output)];
    ++folded;
  }
  graph.annotations["fold-batchnorm.folded"] += folded;
  if (folded > 0) graph.recompute();
}

}  // namespace cuvil::passes
