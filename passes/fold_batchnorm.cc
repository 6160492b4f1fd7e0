#include "passes/fold_batchnorm.h"

#include <cmath>

namespace cuvil::passes {

namespace {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::ValueId;

bool is_graph_output(const Graph& graph, ValueId id) {
  for (ValueId out : graph.outputs()) {
    if (out == id) return true;
  }
  return false;
}

// The conv node whose result `node` (a batch_norm, mul or div) alone reads, when folding is
// safe; -1 otherwise.
int foldable_conv(const Graph& graph, const Node& node, const std::vector<int32_t>& uses) {
  const ValueId x = node.inputs[0];
  const ir::NodeId p = graph.value(x).producer;
  if (p < 0 || uses[static_cast<size_t>(x)] != 1 || is_graph_output(graph, x)) return -1;
  const Node& conv = graph.node(p);
  if (conv.op != OpKind::conv2d || conv.output != x || !conv.epilogue.empty()) return -1;
  if (!node.epilogue.empty()) return -1;
  for (size_t i = 1; i < conv.inputs.size(); ++i) {
    if (!graph.is_constant(conv.inputs[i])) return -1;
  }
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (!graph.is_constant(node.inputs[i])) return -1;
  }
  return p;
}

// A mul or div operand that is constant per output channel of `conv`: one value, or C values
// laid along the channel axis of the conv's layout ([1, C, 1, 1] in NCHW, [..., C] in NHWC).
// Its values per channel, or empty.
std::vector<double> per_channel(const Graph& graph, const Node& conv, ValueId operand) {
  const ir::Shape& shape = graph.value(operand).shape;
  const int64_t channels = graph.value(conv.inputs[1]).shape[0];
  const std::vector<float>& data = graph.constant_data(operand);
  if (shape.size() > 4) return {};
  if (ir::num_elements(shape) == 1)
    return std::vector<double>(static_cast<size_t>(channels), data[0]);
  ir::Shape four(4 - shape.size(), 1);
  four.insert(four.end(), shape.begin(), shape.end());
  const bool nhwc = conv.attrs.get_string("layout", "nchw") == "nhwc";
  const ir::Shape want = nhwc ? ir::Shape{1, 1, 1, channels} : ir::Shape{1, channels, 1, 1};
  if (four != want) return {};
  return {data.begin(), data.end()};
}

// conv's result becomes result * scale[o] + shift[o] per output channel o, through its weight
// and bias (new constants: the originals may be shared with other graph copies).
void rescale_conv(Graph& graph, ir::NodeId conv_id, const std::vector<double>& scale,
                  const std::vector<double>& shift, const std::string& suffix) {
  const Node conv = graph.node(conv_id);
  const ValueId w_id = conv.inputs[1];
  const ir::Shape w_shape = graph.value(w_id).shape;
  const int64_t out_channels = w_shape[0];
  const int64_t per_out = ir::num_elements(w_shape) / out_channels;
  const std::vector<float>& w = graph.constant_data(w_id);
  std::vector<float> new_w(w.size());
  std::vector<float> new_b(static_cast<size_t>(out_channels));
  for (int64_t o = 0; o < out_channels; ++o) {
    const size_t oc = static_cast<size_t>(o);
    for (int64_t k = 0; k < per_out; ++k) {
      const size_t idx = static_cast<size_t>(o * per_out + k);
      new_w[idx] = static_cast<float>(w[idx] * scale[oc]);
    }
    const double bias = conv.inputs.size() == 3 ? graph.constant_data(conv.inputs[2])[oc] : 0.0;
    new_b[oc] = static_cast<float>(bias * scale[oc] + shift[oc]);
  }
  const bool trainable = graph.value(w_id).trainable;
  const ir::DType w_dtype = graph.value(w_id).dtype;
  const ValueId folded_w = graph.add_constant_data(
      conv.name + ".w_" + suffix, ir::Tensor(w_shape, std::move(new_w), w_dtype), trainable);
  const ValueId folded_b = graph.add_constant_data(
      conv.name + ".b_" + suffix, ir::Tensor({out_channels}, std::move(new_b)), trainable);
  graph.mutable_nodes()[static_cast<size_t>(conv_id)].inputs = {conv.inputs[0], folded_w, folded_b};
}

}  // namespace

void FoldBatchNormPass::run(Graph& graph, const ParamMap& /*params*/) const {
  std::vector<int32_t> uses = graph.use_counts();
  int64_t folded = 0, scales = 0;
  const size_t node_count = graph.nodes().size();
  for (size_t i = 0; i < node_count; ++i) {
    const Node node = graph.nodes()[i];  // a copy: adding constants below may move things
    const bool bn = node.op == OpKind::batch_norm;
    if (!bn && node.op != OpKind::mul && node.op != OpKind::div) continue;
    const int conv_id = foldable_conv(graph, node, uses);
    if (conv_id < 0) continue;
    const Node& conv = graph.node(conv_id);
    const size_t channels = static_cast<size_t>(graph.value(conv.inputs[1]).shape[0]);
    std::vector<double> scale(channels), shift(channels, 0.0);
    if (bn) {
      if (conv.attrs.get_string("layout", "nchw") != node.attrs.get_string("layout", "nchw"))
        continue;
      const std::vector<float>& gamma = graph.constant_data(node.inputs[1]);
      const std::vector<float>& beta = graph.constant_data(node.inputs[2]);
      const std::vector<float>& mean = graph.constant_data(node.inputs[3]);
      const std::vector<float>& var = graph.constant_data(node.inputs[4]);
      const double eps = node.attrs.get_float("eps", 1e-5);
      // y = (conv(x) + b - mean) * gamma / sqrt(var + eps) + beta, per output channel.
      for (size_t o = 0; o < channels; ++o) {
        scale[o] = gamma[o] / std::sqrt(static_cast<double>(var[o]) + eps);
        shift[o] = beta[o] - mean[o] * scale[o];
      }
    } else {
      // QAT exports of conv + BN divide the conv's result by a per-channel factor first.
      const std::vector<double> factor = per_channel(graph, conv, node.inputs[1]);
      if (factor.empty() || graph.value(node.output).shape != graph.value(conv.output).shape)
        continue;
      for (size_t o = 0; o < channels; ++o)
        scale[o] = node.op == OpKind::mul ? factor[o] : 1.0 / factor[o];
    }
    rescale_conv(graph, conv_id, scale, shift, bn ? "bn_folded" : "scale_folded");
    const ValueId conv_out = graph.node(conv_id).output;
    graph.replace_all_uses(node.output, conv_out);
    // The conv's result now has the folded node's users; a later BN reading it sees the count.
    uses[static_cast<size_t>(conv_out)] = uses[static_cast<size_t>(node.output)];
    ++(bn ? folded : scales);
  }
  graph.annotations["fold-batchnorm.folded"] += folded;
  graph.annotations["fold-batchnorm.scales_folded"] += scales;
  if (folded + scales > 0) graph.recompute();
}

}  // namespace cuvil::passes
