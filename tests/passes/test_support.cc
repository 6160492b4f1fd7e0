#include "tests/passes/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "passes/ir/tensor.h"
#include "passes/ir/verifier.h"
#include "passes/registry.h"
#include "runtime/executor.h"
#include "runtime/reference/interpreter.h"

namespace cuvil::passes::testing {

using ir::ConstantInit;
using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using Ints = std::vector<int64_t>;

void run_pass(Graph& graph, const std::string& name, const ParamMap& overrides) {
  const Pass* pass = find_pass(name);
  ASSERT_NE(pass, nullptr) << name;
  ParamMap params;
  for (const ParamSpec& spec : pass->params()) params[spec.name] = spec.default_value;
  for (const auto& [key, value] : overrides) params[key] = value;
  pass->run(graph, params);
  ir::verify(graph);
}

double max_error_after(const Graph& before, const Graph& after, uint64_t seed) {
  const std::vector<ir::Tensor> inputs = ir::random_inputs(before, seed);
  const std::vector<ir::Tensor> expected = runtime::reference::interpret(before, inputs);
  const std::vector<ir::Tensor> actual = runtime::reference::interpret(after, inputs);
  EXPECT_EQ(actual.size(), expected.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    EXPECT_EQ(actual[i].shape, expected[i].shape) << "output " << i;
    if (actual[i].shape != expected[i].shape) return 1e30;
    worst = std::max(worst, ir::max_relative_error(actual[i], expected[i]));
  }
  return worst;
}

int count_ops(const Graph& graph, OpKind op) {
  int n = 0;
  for (const ir::Node& node : graph.nodes()) n += node.op == op;
  return n;
}

ValueId random_constant(Graph& graph, const std::string& name, ir::Shape shape, uint64_t seed,
                        float stddev) {
  return graph.add_constant(name, std::move(shape), ConstantInit::normal(0.0f, stddev, seed));
}

ValueId add_batch_norm(Graph& graph, ValueId x, int64_t channels, uint64_t seed,
                       const std::string& layout) {
  const ValueId gamma =
      graph.add_constant("bn_gamma", {channels}, ConstantInit::uniform(0.5f, 1.5f, seed));
  const ValueId beta = random_constant(graph, "bn_beta", {channels}, seed + 1);
  const ValueId mean = random_constant(graph, "bn_mean", {channels}, seed + 2);
  const ValueId var =
      graph.add_constant("bn_var", {channels}, ConstantInit::uniform(0.3f, 2.0f, seed + 3), false);
  return graph.add_node(OpKind::batch_norm, {x, gamma, beta, mean, var},
                        {{"eps", 1e-5}, {"layout", layout}});
}

ValueId add_conv(Graph& graph, ValueId x, int64_t in_channels, int64_t out_channels, int64_t kernel,
                 int64_t stride, bool bias, uint64_t seed, const std::string& layout,
                 int64_t groups) {
  const float scale = 1.0f / static_cast<float>(std::max<int64_t>(1, in_channels * kernel));
  std::vector<ValueId> inputs = {
      x, random_constant(graph, "conv_w", {out_channels, in_channels / groups, kernel, kernel},
                         seed, scale * 2.0f)};
  if (bias) inputs.push_back(random_constant(graph, "conv_b", {out_channels}, seed + 1));
  return graph.add_node(OpKind::conv2d, inputs,
                        {{"stride", Ints{stride, stride}},
                         {"pad", Ints{kernel / 2, kernel / 2}},
                         {"groups", groups},
                         {"layout", layout}});
}

ValueId add_dilated_conv(Graph& graph, ValueId x, int64_t in_channels, int64_t out_channels,
                         int64_t kernel, std::vector<int64_t> dilation, int64_t stride,
                         std::vector<int64_t> pad, uint64_t seed, int64_t groups) {
  const float scale = 1.0f / static_cast<float>(std::max<int64_t>(1, in_channels * kernel));
  std::vector<ValueId> inputs = {
      x,
      random_constant(graph, "conv_w", {out_channels, in_channels / groups, kernel, kernel}, seed,
                      scale * 2.0f),
      random_constant(graph, "conv_b", {out_channels}, seed + 1)};
  return graph.add_node(OpKind::conv2d, inputs,
                        {{"stride", Ints{stride, stride}},
                         {"pad", std::move(pad)},
                         {"dilation", std::move(dilation)},
                         {"groups", groups},
                         {"layout", std::string("nchw")}});
}

Graph tiny_resnet(int64_t batch, int64_t channels, int64_t spatial) {
  Graph g;
  const ValueId x = g.add_input("image", {batch, 3, spatial, spatial});
  ValueId stem = add_conv(g, x, 3, channels, 3, 1, false, 10);
  stem = g.add_node(OpKind::relu, {add_batch_norm(g, stem, channels, 20)});
  ValueId a = add_conv(g, stem, channels, channels, 3, 1, false, 30);
  a = g.add_node(OpKind::relu, {add_batch_norm(g, a, channels, 40)});
  a = add_conv(g, a, channels, 2 * channels, 1, 2, false, 50);
  a = add_batch_norm(g, a, 2 * channels, 60);
  ValueId shortcut = add_conv(g, stem, channels, 2 * channels, 1, 2, false, 70);
  shortcut = add_batch_norm(g, shortcut, 2 * channels, 80);
  ValueId y = g.add_node(OpKind::relu, {g.add_node(OpKind::add, {a, shortcut})});
  y = g.add_node(OpKind::max_pool2d, {y},
                 {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"pad", Ints{1, 1}}});
  y = g.add_node(OpKind::global_avg_pool, {y});
  const ValueId w = random_constant(g, "fc_w", {5, 2 * channels}, 90);
  const ValueId b = random_constant(g, "fc_b", {5}, 91);
  g.mark_output(g.add_node(OpKind::linear, {y, w, b}));
  return g;
}

Graph tiny_decoder(int64_t batch, int64_t seq, int64_t dim) {
  // dim = heads * head_dim with 4 query heads and 2 kv heads.
  const int64_t heads = 4, kv_heads = 2, head_dim = dim / heads, ffn = 3 * dim - 1;
  Graph g;
  const ValueId x = g.add_input("x", {batch, seq, dim});
  const ValueId norm_w = g.add_constant("norm", {dim}, ConstantInit::uniform(0.5f, 1.5f, 1));
  const ValueId h = g.add_node(OpKind::rms_norm, {x, norm_w}, {{"eps", 1e-5}});
  auto project = [&](ValueId in, int64_t out, int64_t in_dim, uint64_t seed) {
    return g.add_node(OpKind::linear,
                      {in, random_constant(g, "w", {out, in_dim}, seed, 1.0f / in_dim)});
  };
  auto heads_first = [&](ValueId v, int64_t n) {
    v = g.add_node(OpKind::reshape, {v}, {{"shape", Ints{batch, seq, n, head_dim}}});
    return g.add_node(OpKind::transpose, {v}, {{"perm", Ints{0, 2, 1, 3}}});
  };
  ValueId q = heads_first(project(h, dim, dim, 2), heads);
  ValueId k = heads_first(project(h, kv_heads * head_dim, dim, 3), kv_heads);
  const ValueId v = heads_first(project(h, kv_heads * head_dim, dim, 4), kv_heads);
  q = g.add_node(OpKind::rope, {q}, {{"theta", 500000.0}});
  k = g.add_node(OpKind::rope, {k}, {{"theta", 500000.0}});
  ValueId attn = g.add_node(OpKind::sdpa, {q, k, v}, {{"causal", int64_t{1}}});
  attn = g.add_node(OpKind::transpose, {attn}, {{"perm", Ints{0, 2, 1, 3}}});
  attn = g.add_node(OpKind::reshape, {attn}, {{"shape", Ints{batch, seq, dim}}});
  const ValueId h1 = g.add_node(OpKind::add, {x, project(attn, dim, dim, 5)});
  const ValueId norm2 = g.add_constant("norm2", {dim}, ConstantInit::uniform(0.5f, 1.5f, 6));
  const ValueId h2 = g.add_node(OpKind::rms_norm, {h1, norm2}, {{"eps", 1e-5}});
  const ValueId gate = g.add_node(OpKind::silu, {project(h2, ffn, dim, 7)});
  const ValueId up = project(h2, ffn, dim, 8);
  const ValueId down = project(g.add_node(OpKind::mul, {gate, up}), dim, ffn, 9);
  g.mark_output(g.add_node(OpKind::add, {h1, down}));
  return g;
}

Graph tiny_unet_block(int64_t batch, int64_t channels, int64_t spatial) {
  const int64_t groups = 1;
  Graph g;
  const ValueId x = g.add_input("latent", {batch, channels, spatial, spatial});
  const ValueId temb = g.add_input("temb", {batch, 11});
  auto group_norm = [&](ValueId v, int64_t c, uint64_t seed) {
    const ValueId gamma = g.add_constant("gn_g", {c}, ConstantInit::uniform(0.5f, 1.5f, seed));
    const ValueId beta = random_constant(g, "gn_b", {c}, seed + 1);
    return g.add_node(OpKind::group_norm, {v, gamma, beta}, {{"groups", groups}, {"eps", 1e-5}});
  };
  ValueId h = g.add_node(OpKind::silu, {group_norm(x, channels, 1)});
  h = add_conv(g, h, channels, channels, 3, 1, true, 3);
  // Time embedding: linear to [N, C], reshaped to [N, C, 1, 1] and broadcast over H, W.
  ValueId t = g.add_node(OpKind::linear, {g.add_node(OpKind::silu, {temb}),
                                          random_constant(g, "temb_w", {channels, 11}, 5)});
  t = g.add_node(OpKind::reshape, {t}, {{"shape", Ints{batch, channels, 1, 1}}});
  h = g.add_node(OpKind::add, {h, t});
  h = g.add_node(OpKind::silu, {group_norm(h, channels, 7)});
  h = add_conv(g, h, channels, channels, 3, 1, true, 9);
  h = g.add_node(OpKind::add, {x, h});  // residual, the running value on the right
  // Up-block: upsample, concat the skip along channels, mix with a 1x1 conv.
  ValueId up = g.add_node(OpKind::upsample_nearest2d, {h}, {{"scale", int64_t{2}}});
  ValueId skip = g.add_node(OpKind::upsample_nearest2d, {x}, {{"scale", int64_t{2}}});
  ValueId cat = g.add_node(OpKind::concat, {up, skip}, {{"axis", int64_t{1}}});
  ValueId mixed = add_conv(g, cat, 2 * channels, channels, 1, 1, true, 11);
  // Attention over the H*W tokens (sees NCHW through reshape/transpose).
  const int64_t tokens = 4 * spatial * spatial;
  ValueId seq = g.add_node(OpKind::reshape, {mixed}, {{"shape", Ints{batch, channels, tokens}}});
  seq = g.add_node(OpKind::transpose, {seq}, {{"perm", Ints{0, 2, 1}}});
  seq = g.add_node(OpKind::layer_norm,
                   {seq, g.add_constant("ln_g", {channels}, ConstantInit::uniform(0.5f, 1.5f, 13)),
                    random_constant(g, "ln_b", {channels}, 14)},
                   {{"eps", 1e-5}});
  ValueId qkv = g.add_node(OpKind::reshape, {seq}, {{"shape", Ints{batch, 1, tokens, channels}}});
  ValueId attn = g.add_node(OpKind::sdpa, {qkv, qkv, qkv});
  attn = g.add_node(OpKind::reshape, {attn}, {{"shape", Ints{batch, tokens, channels}}});
  attn = g.add_node(OpKind::transpose, {attn}, {{"perm", Ints{0, 2, 1}}});
  attn = g.add_node(OpKind::reshape, {attn},
                    {{"shape", Ints{batch, channels, 2 * spatial, 2 * spatial}}});
  const ValueId out = g.add_node(OpKind::add, {attn, mixed});
  g.mark_output(out);
  g.mark_output(g.add_node(OpKind::avg_pool2d, {out},
                           {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"pad", Ints{1, 1}}}));
  return g;
}

double compiled_error_of(const Compiled& compiled, const ir::Graph& graph, uint64_t seed) {
  const auto inputs = ir::random_inputs(graph, seed);
  const auto want = runtime::reference::interpret(graph, inputs);
  runtime::Executor executor(compiled.plan);
  const auto got = executor.run(inputs);
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return 1e30;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].shape != want[i].shape) return 1e30;
    worst = std::max(worst, ir::max_relative_error(got[i], want[i]));
  }
  return worst;
}

double compiled_vs_reference(const ir::Graph& graph, const PipelineConfig& config, int threads) {
  return compiled_error_of(compile(graph, config, threads), graph, 5);
}

}  // namespace cuvil::passes::testing
