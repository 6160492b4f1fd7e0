// recognize-patterns: each decomposed form an exporter writes becomes the fused op, the result
// is unchanged (reference interpreter before vs after), and a chain whose intermediates are read
// elsewhere is left alone.
#include <gtest/gtest.h>

#include <cmath>

#include "test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using testing::count_ops;
using testing::max_error_after;
using testing::random_constant;
using testing::run_pass;
using Ints = std::vector<int64_t>;

ValueId scalar(Graph& g, const std::string& name, float v) {
  return g.add_constant_data(name, ir::Tensor({}, {v}));
}

// x -> (x - mean) / sqrt(var + eps) * gamma + beta, as torch.onnx.export writes LayerNorm at
// opset < 17.
ValueId decomposed_layer_norm(Graph& g, ValueId x, int64_t dim, bool affine) {
  const ValueId mean = g.add_node(OpKind::reduce_mean, {x}, {{"axes", Ints{-1}}}, "mean");
  const ValueId d = g.add_node(OpKind::sub, {x, mean}, {}, "sub");
  const ValueId sq = g.add_node(OpKind::pow, {d, scalar(g, "two", 2.0f)}, {}, "pow");
  const ValueId var = g.add_node(OpKind::reduce_mean, {sq}, {{"axes", Ints{-1}}}, "var");
  const ValueId e = g.add_node(OpKind::add, {var, scalar(g, "eps", 1e-5f)}, {}, "add_eps");
  const ValueId s = g.add_node(OpKind::sqrt, {e}, {}, "sqrt");
  ValueId y = g.add_node(OpKind::div, {d, s}, {}, "div");
  if (affine) {
    y = g.add_node(OpKind::mul, {y, random_constant(g, "gamma", {dim}, 3)}, {}, "gamma");
    y = g.add_node(OpKind::add, {y, random_constant(g, "beta", {dim}, 4)}, {}, "beta");
  }
  return y;
}

TEST(RecognizePatterns, LayerNormChainBecomesLayerNorm) {
  for (bool affine : {true, false}) {
    Graph g;
    const ValueId x = g.add_input("x", {2, 7, 17});
    g.mark_output(decomposed_layer_norm(g, x, 17, affine));
    const Graph before = g;
    run_pass(g, "recognize-patterns");
    EXPECT_EQ(count_ops(g, OpKind::layer_norm), 1);
    EXPECT_EQ(g.nodes().size(), 1u);
    EXPECT_LT(max_error_after(before, g), 1e-5);
  }
}

TEST(RecognizePatterns, LayerNormWhoseDifferenceIsReadElsewhereStays) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 8});
  const ValueId y = decomposed_layer_norm(g, x, 8, false);
  g.mark_output(y);
  // The centred value is also an output: the chain cannot disappear.
  for (const ir::Node& n : g.nodes()) {
    if (n.op == OpKind::sub) g.mark_output(n.output);
  }
  run_pass(g, "recognize-patterns");
  EXPECT_EQ(count_ops(g, OpKind::layer_norm), 0);
}

// The three associations of x * 0.5 * (1 + erf(x / sqrt 2)) exporters write.
Graph decomposed_gelu(int form) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 19});
  const ValueId e = g.add_node(
      OpKind::erf, {g.add_node(OpKind::div, {x, scalar(g, "sqrt2", std::sqrt(2.0f))}, {}, "div")},
      {}, "erf");
  const ValueId a = g.add_node(OpKind::add, {e, scalar(g, "one", 1.0f)}, {}, "add");
  const ValueId half = scalar(g, "half", 0.5f);
  ValueId y;
  if (form == 0) {
    y = g.add_node(OpKind::mul, {g.add_node(OpKind::mul, {x, a}, {}, "m1"), half}, {}, "m2");
  } else if (form == 1) {
    y = g.add_node(OpKind::mul, {g.add_node(OpKind::mul, {x, half}, {}, "m1"), a}, {}, "m2");
  } else {
    y = g.add_node(OpKind::mul, {g.add_node(OpKind::mul, {a, half}, {}, "m1"), x}, {}, "m2");
  }
  g.mark_output(y);
  return g;
}

TEST(RecognizePatterns, EveryGeluAssociationBecomesGelu) {
  for (int form = 0; form < 3; ++form) {
    Graph g = decomposed_gelu(form);
    const Graph before = g;
    run_pass(g, "recognize-patterns");
    EXPECT_EQ(count_ops(g, OpKind::gelu), 1) << "form " << form;
    EXPECT_EQ(g.nodes().size(), 1u) << "form " << form;
    EXPECT_LT(max_error_after(before, g), 1e-5);
  }
}

TEST(RecognizePatterns, GeluWithTheWrongConstantStays) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 5});
  const ValueId e = g.add_node(OpKind::erf, {g.add_node(OpKind::div, {x, scalar(g, "c", 1.3f)})});
  const ValueId a = g.add_node(OpKind::add, {e, scalar(g, "one", 1.0f)});
  g.mark_output(g.add_node(OpKind::mul, {g.add_node(OpKind::mul, {x, a}), scalar(g, "h", 0.5f)}));
  run_pass(g, "recognize-patterns");
  EXPECT_EQ(count_ops(g, OpKind::gelu), 0);
}

TEST(RecognizePatterns, SiluAndHardSwishForms) {
  {
    Graph g;
    const ValueId x = g.add_input("x", {2, 3, 5, 5});
    g.mark_output(g.add_node(OpKind::mul, {g.add_node(OpKind::sigmoid, {x}), x}));
    const Graph before = g;
    run_pass(g, "recognize-patterns");
    EXPECT_EQ(count_ops(g, OpKind::silu), 1);
    EXPECT_EQ(g.nodes().size(), 1u);
    EXPECT_LT(max_error_after(before, g), 1e-6);
  }
  {
    Graph g;
    const ValueId x = g.add_input("x", {4, 17});
    const ValueId h = g.add_node(OpKind::hard_sigmoid, {x}, {{"alpha", 1.0 / 6.0}, {"beta", 0.5}});
    g.mark_output(g.add_node(OpKind::mul, {x, h}));
    const Graph before = g;
    run_pass(g, "recognize-patterns");
    EXPECT_EQ(count_ops(g, OpKind::hard_swish), 1);
    EXPECT_LT(max_error_after(before, g), 1e-6);
  }
  {
    Graph g;
    const ValueId x = g.add_input("x", {4, 17});
    const ValueId c =
        g.add_node(OpKind::clip, {g.add_node(OpKind::add, {x, scalar(g, "three", 3)})},
                   {{"min", 0.0}, {"max", 6.0}});
    g.mark_output(g.add_node(OpKind::div, {g.add_node(OpKind::mul, {x, c}), scalar(g, "six", 6)}));
    const Graph before = g;
    run_pass(g, "recognize-patterns");
    EXPECT_EQ(count_ops(g, OpKind::hard_swish), 1);
    EXPECT_EQ(g.nodes().size(), 1u);
    EXPECT_LT(max_error_after(before, g), 1e-6);
  }
  {  // PyTorch's hardsigmoid slope is 1/6: another slope is not a hardswish
    Graph g;
    const ValueId x = g.add_input("x", {4, 17});
    g.mark_output(g.add_node(OpKind::mul, {x, g.add_node(OpKind::hard_sigmoid, {x})}));
    run_pass(g, "recognize-patterns");
    EXPECT_EQ(count_ops(g, OpKind::hard_swish), 0);
  }
}

// torch.nn.MultiheadAttention's export: q [B*H, S, D] scaled, k^T by a transpose, softmax, v.
TEST(RecognizePatterns, ThreeDimensionalAttentionBecomesSdpa) {
  Graph g;
  const ValueId q = g.add_input("q", {6, 7, 16});
  const ValueId k = g.add_input("k", {7, 6, 16});  // [S, B*H, D]: transposed into place below
  const ValueId v = g.add_input("v", {6, 7, 16});
  const ValueId qs = g.add_node(OpKind::div, {q, scalar(g, "scale", 4.0f)}, {}, "qscale");
  const ValueId kt = g.add_node(OpKind::transpose, {k}, {{"perm", Ints{1, 2, 0}}}, "kt");
  const ValueId s = g.add_node(OpKind::matmul, {qs, kt}, {}, "scores");
  const ValueId p = g.add_node(OpKind::softmax, {s}, {{"axis", int64_t{-1}}}, "softmax");
  g.mark_output(g.add_node(OpKind::matmul, {p, v}, {}, "context"));
  const Graph before = g;
  run_pass(g, "recognize-patterns");
  EXPECT_EQ(count_ops(g, OpKind::sdpa), 1);
  EXPECT_EQ(count_ops(g, OpKind::softmax), 0);
  EXPECT_LT(max_error_after(before, g), 1e-5);
}

TEST(RecognizePatterns, FourDimensionalAttentionWithScaledScoresBecomesSdpa) {
  Graph g;
  const ValueId q = g.add_input("q", {2, 3, 5, 8});
  const ValueId k = g.add_input("k", {2, 3, 9, 8});
  const ValueId v = g.add_input("v", {2, 3, 9, 4});
  const ValueId kt = g.add_node(OpKind::transpose, {k}, {{"perm", Ints{0, 1, 3, 2}}}, "kt");
  const ValueId s = g.add_node(OpKind::matmul, {q, kt}, {}, "scores");
  const ValueId ss = g.add_node(OpKind::mul, {s, scalar(g, "c", 0.125f)}, {}, "scaled");
  const ValueId p = g.add_node(OpKind::softmax, {ss}, {{"axis", int64_t{3}}}, "softmax");
  g.mark_output(g.add_node(OpKind::matmul, {p, v}, {}, "context"));
  const Graph before = g;
  run_pass(g, "recognize-patterns");
  EXPECT_EQ(count_ops(g, OpKind::sdpa), 1);
  EXPECT_EQ(count_ops(g, OpKind::transpose), 0);  // k^T of k collapses to k itself
  EXPECT_LT(max_error_after(before, g), 1e-5);
}

TEST(RecognizePatterns, MaskedAttentionStays) {
  Graph g;
  const ValueId q = g.add_input("q", {2, 5, 8});
  const ValueId kt = g.add_input("kt", {2, 8, 5});
  const ValueId v = g.add_input("v", {2, 5, 8});
  const ValueId s = g.add_node(OpKind::matmul, {q, kt});
  const ValueId m = g.add_node(OpKind::add, {s, g.add_input("mask", {5, 5})});
  g.mark_output(g.add_node(OpKind::matmul, {g.add_node(OpKind::softmax, {m}), v}));
  run_pass(g, "recognize-patterns");
  EXPECT_EQ(count_ops(g, OpKind::sdpa), 0);
}

TEST(RecognizePatterns, EachRewriteCanBeTurnedOff) {
  Graph g = decomposed_gelu(0);
  run_pass(g, "recognize-patterns", {{"gelu", false}});
  EXPECT_EQ(count_ops(g, OpKind::gelu), 0);
  EXPECT_EQ(count_ops(g, OpKind::erf), 1);
}

}  // namespace
}  // namespace cuvil::passes
