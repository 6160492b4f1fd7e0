// Every CPU kernel against the reference interpreter, on single-op graphs lowered with
// passes::lower, with 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lower_support.h"
#include "passes/pipeline.h"
#include "test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;
using Ints = std::vector<int64_t>;
using testing::compiled_error;
using testing::random_constant;

void expect_matches_reference(const Graph& g) {
  for (int threads : {1, 2}) {
    EXPECT_LT(compiled_error(g, threads), 1e-4) << "threads=" << threads;
  }
}

Graph single(OpKind op, const std::vector<Shape>& inputs, ir::Attrs attrs = {}) {
  Graph g;
  std::vector<ValueId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "x";  // built by append: GCC 12 warns falsely on "x" + std::string
    name += std::to_string(i);
    ids.push_back(g.add_input(name, inputs[i]));
  }
  g.mark_output(g.add_node(op, ids, attrs, "op"));
  return g;
}

struct ConvCase {
  int64_t n, c, h, w, o, k, stride, pad, groups;
  bool bias;
};

Graph conv_graph(const ConvCase& cc, const std::string& layout, const std::string& kernel = "") {
  Graph g;
  const Shape xs = layout == "nhwc" ? Shape{cc.n, cc.h, cc.w, cc.c} : Shape{cc.n, cc.c, cc.h, cc.w};
  std::vector<ValueId> in = {g.add_input("x", xs),
                             random_constant(g, "w", {cc.o, cc.c / cc.groups, cc.k, cc.k}, 1)};
  if (cc.bias) in.push_back(random_constant(g, "b", {cc.o}, 2));
  ir::Attrs a{{"stride", Ints{cc.stride, cc.stride}},
              {"pad", Ints{cc.pad, cc.pad}},
              {"groups", cc.groups},
              {"layout", layout}};
  if (!kernel.empty()) a.set("impl", kernel);
  g.mark_output(g.add_node(OpKind::conv2d, in, a, "conv"));
  return g;
}

const ConvCase kConvCases[] = {
    {1, 3, 9, 9, 8, 3, 1, 1, 1, true},   {2, 5, 17, 13, 7, 3, 2, 1, 1, false},
    {1, 6, 11, 11, 4, 3, 1, 0, 2, true}, {1, 3, 17, 17, 5, 7, 2, 3, 1, true},
    {2, 7, 5, 6, 9, 1, 1, 0, 1, true},   {1, 8, 9, 9, 6, 1, 2, 0, 1, false},
    {1, 12, 6, 7, 9, 1, 1, 0, 3, true}};

TEST(LowerKernels, Conv2dNchwMatchesReference) {
  for (const ConvCase& cc : kConvCases) expect_matches_reference(conv_graph(cc, "nchw"));
}

TEST(LowerKernels, Conv2dNhwcMatchesReference) {
  for (const ConvCase& cc : kConvCases) expect_matches_reference(conv_graph(cc, "nhwc"));
}

TEST(LowerKernels, Conv2dIm2colVariantHandlesOneByOne) {
  expect_matches_reference(conv_graph({2, 7, 5, 6, 9, 1, 1, 0, 1, true}, "nchw", "conv2d.im2col"));
  expect_matches_reference(conv_graph({2, 7, 5, 6, 9, 1, 1, 0, 1, true}, "nhwc", "conv2d.im2col"));
}

// Dilated convolutions at odd sizes (1, 3, 7, 17 channels and pixels), strided, grouped,
// depthwise and with unequal dilations, on every kernel that runs them: conv2d.auto (im2col),
// conv2d.im2col and conv2d.onednn.
TEST(LowerKernels, Conv2dDilatedMatchesReferenceOnEveryKernelThatRunsIt) {
  struct Dilated {
    ConvCase conv;
    Ints dilation;
  };
  const Dilated cases[] = {{{1, 3, 17, 17, 7, 3, 1, 2, 1, true}, {2, 2}},
                           {{2, 7, 13, 9, 5, 3, 2, 1, 1, false}, {2, 3}},
                           {{1, 7, 17, 7, 7, 3, 1, 3, 7, true}, {3, 3}},
                           {{1, 1, 7, 7, 3, 3, 1, 0, 1, true}, {3, 1}},
                           {{1, 6, 9, 11, 4, 5, 1, 4, 2, true}, {2, 2}}};
  for (const Dilated& d : cases) {
    for (const char* layout : {"nchw", "nhwc"}) {
      for (const char* kernel : {"", "conv2d.im2col", "conv2d.onednn"}) {
        Graph g = conv_graph(d.conv, layout, kernel);
        g.mutable_nodes()[0].attrs.set("dilation", d.dilation);
        g.recompute();
        SCOPED_TRACE(std::string(layout) + " " + kernel + " c=" + std::to_string(d.conv.c));
        expect_matches_reference(g);
      }
    }
  }
}

// conv -> epilogue (relu, add residual) with the residual appended after the op's inputs.
Graph conv_with_epilogue(const std::string& layout, bool bias) {
  Graph g = conv_graph({1, 5, 9, 7, 6, 3, 1, 1, 1, bias}, layout);
  const Shape out = g.value(g.outputs()[0]).shape;
  const ValueId residual = g.add_input("residual", out);
  ir::Node& conv = g.mutable_nodes()[0];
  conv.inputs.push_back(residual);
  conv.epilogue = {{OpKind::relu, -1}, {OpKind::add, static_cast<int>(conv.inputs.size() - 1)}};
  g.recompute();
  return g;
}

TEST(LowerKernels, Conv2dEpilogueMatchesReference) {
  for (const char* layout : {"nchw", "nhwc"}) {
    for (bool bias : {false, true}) expect_matches_reference(conv_with_epilogue(layout, bias));
  }
}

TEST(LowerKernels, LinearWithBiasAndEpilogueMatchesReference) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 7, 33});
  const ValueId y = g.add_node(
      OpKind::linear, {x, random_constant(g, "w", {17, 33}, 1), random_constant(g, "b", {17}, 2)},
      {}, "fc");
  g.mark_output(y);
  g.mutable_nodes()[0].epilogue = {{OpKind::gelu, -1}};
  g.recompute();
  expect_matches_reference(g);
  expect_matches_reference(single(OpKind::linear, {{1, 5}, {3, 5}}));
}

TEST(LowerKernels, MatmulWithBatchBroadcastingMatchesReference) {
  expect_matches_reference(single(OpKind::matmul, {{2, 3, 5, 7}, {3, 7, 9}}));
  expect_matches_reference(single(OpKind::matmul, {{17, 33}, {33, 3}}));
  expect_matches_reference(single(OpKind::matmul, {{1, 4, 1, 8}, {2, 1, 8, 5}}));
}

ir::Attrs sdpa_attrs(bool causal) {
  return {{"causal", int64_t{causal ? 1 : 0}}};
}

TEST(LowerKernels, SdpaMatchesReference) {
  expect_matches_reference(single(OpKind::sdpa, {{2, 3, 7, 16}, {2, 3, 9, 16}, {2, 3, 9, 8}}));
}

TEST(LowerKernels, SdpaCausalMatchesReference) {
  expect_matches_reference(
      single(OpKind::sdpa, {{1, 2, 17, 8}, {1, 2, 17, 8}, {1, 2, 17, 8}}, sdpa_attrs(true)));
}

TEST(LowerKernels, SdpaGroupedQueryCausalEndAlignedMatchesReference) {
  expect_matches_reference(
      single(OpKind::sdpa, {{2, 4, 5, 16}, {2, 2, 9, 16}, {2, 2, 9, 16}}, sdpa_attrs(true)));
}

TEST(LowerKernels, SdpaDecodeOneQueryMatchesReference) {
  expect_matches_reference(
      single(OpKind::sdpa, {{1, 8, 1, 32}, {1, 2, 33, 32}, {1, 2, 33, 32}}, sdpa_attrs(true)));
}

TEST(LowerKernels, SdpaLongKeysAndExplicitScaleMatchReference) {
  // More keys than one block of scores holds per row group.
  expect_matches_reference(
      single(OpKind::sdpa, {{1, 1, 70, 8}, {1, 1, 300, 8}, {1, 1, 300, 4}}, {{"scale", 0.3}}));
}

TEST(LowerKernels, BatchNormBothLayoutsMatchReference) {
  for (const char* layout : {"nchw", "nhwc"}) {
    Graph g;
    const Shape xs = std::string(layout) == "nhwc" ? Shape{2, 5, 3, 7} : Shape{2, 7, 5, 3};
    const ValueId x = g.add_input("x", xs);
    g.mark_output(testing::add_batch_norm(g, x, 7, 3, layout));
    expect_matches_reference(g);
  }
}

TEST(LowerKernels, GroupNormBothLayoutsMatchReference) {
  for (const char* layout : {"nchw", "nhwc"}) {
    Graph g;
    const Shape xs = std::string(layout) == "nhwc" ? Shape{2, 5, 3, 6} : Shape{2, 6, 5, 3};
    const ValueId x = g.add_input("x", xs);
    g.mark_output(g.add_node(OpKind::group_norm,
                             {x, random_constant(g, "g", {6}, 1), random_constant(g, "b", {6}, 2)},
                             {{"groups", int64_t{3}}, {"layout", std::string(layout)}}, "gn"));
    expect_matches_reference(g);
  }
}

TEST(LowerKernels, LayerAndRmsNormMatchReference) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 5, 37});
  g.mark_output(g.add_node(OpKind::layer_norm,
                           {x, random_constant(g, "g", {37}, 1), random_constant(g, "b", {37}, 2)},
                           {{"eps", 1e-5}}, "ln"));
  g.mark_output(g.add_node(OpKind::rms_norm, {x, random_constant(g, "r", {37}, 3)}, {}, "rms"));
  expect_matches_reference(g);
}

TEST(LowerKernels, SoftmaxAnyAxisMatchesReference) {
  expect_matches_reference(single(OpKind::softmax, {{3, 5, 33}}));
  expect_matches_reference(single(OpKind::softmax, {{3, 5, 7}}, {{"axis", int64_t{1}}}));
}

TEST(LowerKernels, BinaryBroadcastingMatchesReference) {
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div}) {
    expect_matches_reference(single(op, {{3, 17}, {3, 17}}));
    expect_matches_reference(single(op, {{3, 1, 5}, {4, 1}}));
    expect_matches_reference(single(op, {{1, 6, 1, 1}, {2, 6, 3, 5}}));
    expect_matches_reference(single(op, {{2, 6, 3, 5}, {5}}));
  }
}

TEST(LowerKernels, UnaryMatchesReference) {
  for (OpKind op : {OpKind::relu, OpKind::silu, OpKind::gelu, OpKind::sigmoid}) {
    expect_matches_reference(single(op, {{3, 7, 19}}));
  }
}

TEST(LowerKernels, RopeWithOffsetMatchesReference) {
  expect_matches_reference(
      single(OpKind::rope, {{2, 3, 7, 16}}, {{"theta", 500000.0}, {"pos_offset", int64_t{5}}}));
}

TEST(LowerKernels, PoolsBothLayoutsMatchReference) {
  for (const char* layout : {"nchw", "nhwc"}) {
    const Shape xs = std::string(layout) == "nhwc" ? Shape{2, 9, 7, 3} : Shape{2, 3, 9, 7};
    const ir::Attrs a{{"kernel", Ints{3, 3}},
                      {"stride", Ints{2, 2}},
                      {"pad", Ints{1, 1}},
                      {"layout", std::string(layout)}};
    expect_matches_reference(single(OpKind::max_pool2d, {xs}, a));
    expect_matches_reference(single(OpKind::avg_pool2d, {xs}, a));
    expect_matches_reference(
        single(OpKind::global_avg_pool, {xs}, {{"layout", std::string(layout)}}));
    expect_matches_reference(single(OpKind::upsample_nearest2d, {xs},
                                    {{"scale", int64_t{2}}, {"layout", std::string(layout)}}));
  }
}

TEST(LowerKernels, NhwcPoolsMatchReferenceAroundTheChannelChunk) {
  // The NHWC kernel pools 64 channels of a pixel at a time: counts below, at and across it.
  for (int64_t c : {1, 17, 64, 70, 130}) {
    for (const Ints& kernel_stride_pad : {Ints{3, 2, 1}, Ints{2, 1, 0}}) {
      const int64_t kk = kernel_stride_pad[0], s = kernel_stride_pad[1], p = kernel_stride_pad[2];
      for (int64_t include_pad : {0, 1}) {
        const ir::Attrs a{{"kernel", Ints{kk, kk}},
                          {"stride", Ints{s, s}},
                          {"pad", Ints{p, p}},
                          {"count_include_pad", include_pad},
                          {"layout", std::string("nhwc")}};
        SCOPED_TRACE("c=" + std::to_string(c) + " kernel=" + std::to_string(kk));
        expect_matches_reference(single(OpKind::max_pool2d, {{1, 7, 5, c}}, a));
        expect_matches_reference(single(OpKind::avg_pool2d, {{1, 7, 5, c}}, a));
      }
    }
  }
}

TEST(LowerKernels, MaxPoolKeepsNaNAsTheReferenceDoes) {
  // A NaN anywhere in a window is its max (PyTorch's and the reference's rule), whichever tap
  // holds it and whatever the other taps hold.
  for (const char* layout : {"nchw", "nhwc"}) {
    const Shape xs = std::string(layout) == "nhwc" ? Shape{1, 6, 7, 70} : Shape{1, 70, 6, 7};
    const Graph g = single(OpKind::max_pool2d, {xs},
                           {{"kernel", Ints{3, 3}},
                            {"stride", Ints{2, 2}},
                            {"pad", Ints{1, 1}},
                            {"layout", std::string(layout)}});
    auto inputs = ir::random_inputs(g, 5);
    std::vector<float>& x = inputs[0].data;
    for (size_t i = 0; i < x.size(); i += 37) x[i] = std::numeric_limits<float>::quiet_NaN();
    const auto want = runtime::reference::interpret(g, inputs);
    for (int threads : {1, 2}) {
      runtime::Executor executor(lower(g, {threads}));
      const auto got = executor.run(inputs);
      ASSERT_EQ(got[0].data.size(), want[0].data.size());
      int64_t nans = 0;
      for (size_t i = 0; i < want[0].data.size(); ++i) {
        const float w = want[0].data[i], v = got[0].data[i];
        nans += std::isnan(w);
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(v)) << layout << " threads=" << threads << " at " << i;
        } else {
          EXPECT_EQ(v, w) << layout << " threads=" << threads << " at " << i;
        }
      }
      EXPECT_GT(nans, 0);
    }
  }
}

TEST(LowerKernels, ConcatSliceReshapeMatchReference) {
  Graph g;
  const ValueId a = g.add_input("a", {2, 3, 5});
  const ValueId b = g.add_input("b", {2, 1, 5});
  const ValueId c = g.add_input("c", {2, 4, 5});
  const ValueId cat = g.add_node(OpKind::concat, {a, b, c}, {{"axis", int64_t{1}}}, "cat");
  g.mark_output(cat);
  g.mark_output(g.add_node(OpKind::slice, {cat},
                           {{"axis", int64_t{2}}, {"start", int64_t{1}}, {"end", int64_t{4}}},
                           "sl"));
  g.mark_output(g.add_node(OpKind::reshape, {cat}, {{"shape", Ints{-1, 8}}}, "rs"));
  expect_matches_reference(g);
}

TEST(LowerKernels, TransposeEveryPermKindMatchesReference) {
  const std::vector<Ints> perms4 = {
      {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 2, 1, 3}, {3, 2, 1, 0}, {0, 1, 2, 3}};
  for (const Ints& p : perms4) {
    expect_matches_reference(single(OpKind::transpose, {{2, 3, 37, 5}}, {{"perm", p}}));
  }
  expect_matches_reference(single(OpKind::transpose, {{33, 47}}, {{"perm", Ints{1, 0}}}));
  expect_matches_reference(single(OpKind::transpose, {{3, 1, 7}}, {{"perm", Ints{2, 0, 1}}}));
}

TEST(LowerKernels, EmbeddingMatchesReference) {
  Graph g;
  const ValueId ids = g.add_input("ids", {2, 5}, ir::DType::i32);
  g.mutable_value(ids).index_bound = 11;
  g.mark_output(
      g.add_node(OpKind::embedding, {random_constant(g, "table", {11, 6}, 1), ids}, {}, "emb"));
  expect_matches_reference(g);
}

TEST(LowerKernels, TinyModelsMatchReference) {
  expect_matches_reference(testing::tiny_resnet(2, 8, 12));
  expect_matches_reference(testing::tiny_decoder(2, 7, 32));
  expect_matches_reference(testing::tiny_unet_block(1, 8, 6));
}

// The ops imported models add, at odd sizes (1, 3, 7, 17 ...).

TEST(LowerKernels, MoreUnaryOpsMatchReference) {
  for (OpKind op :
       {OpKind::tanh, OpKind::erf, OpKind::exp, OpKind::neg, OpKind::abs, OpKind::hard_swish}) {
    expect_matches_reference(single(op, {{3, 7, 19}}));
    expect_matches_reference(single(op, {{1}}));
  }
  expect_matches_reference(single(OpKind::clip, {{3, 17}}, {{"min", -0.5}, {"max", 0.7}}));
  expect_matches_reference(
      single(OpKind::hard_sigmoid, {{3, 17}}, {{"alpha", 0.3}, {"beta", 0.4}}));
  expect_matches_reference(single(OpKind::leaky_relu, {{7, 3}}, {{"alpha", 0.2}}));
}

// Inputs scaled to +-8 so that floor, ceil, round and sign see many integers apart, sin and cos
// several periods.
TEST(LowerKernels, SinCosFloorCeilRoundSignMatchReference) {
  for (OpKind op :
       {OpKind::sin, OpKind::cos, OpKind::floor, OpKind::ceil, OpKind::round, OpKind::sign}) {
    for (const Shape& s : {Shape{3, 7, 19}, Shape{1}, Shape{17}}) {
      Graph g;
      const ValueId x = g.add_input("x", s);
      const ValueId scaled = g.add_node(OpKind::mul, {x, random_constant(g, "scale", s, 3, 8.0f)});
      g.mark_output(g.add_node(op, {scaled}));
      expect_matches_reference(g);
      g = single(op, {s});
      expect_matches_reference(g);
    }
  }
}

// Inputs as 0.9 tanh(x), inside the domains of asin, acos and atanh; acosh reads 1 + |x|.
TEST(LowerKernels, TrigonometricAndHyperbolicMatchReference) {
  for (OpKind op : {OpKind::tan, OpKind::asin, OpKind::acos, OpKind::atan, OpKind::sinh,
                    OpKind::cosh, OpKind::asinh, OpKind::acosh, OpKind::atanh}) {
    for (const Shape& s : {Shape{3, 7, 19}, Shape{1}, Shape{17}}) {
      Graph g;
      const ValueId x = g.add_input("x", s);
      const ValueId in =
          op == OpKind::acosh
              ? g.add_node(OpKind::add,
                           {g.add_node(OpKind::abs, {x}),
                            g.add_constant("one", {1}, ir::ConstantInit::uniform(1, 1, 1))})
              : g.add_node(OpKind::mul,
                           {g.add_node(OpKind::tanh, {x}),
                            g.add_constant("k", {1}, ir::ConstantInit::uniform(0.9f, 0.9f, 1))});
      g.mark_output(g.add_node(op, {in}));
      expect_matches_reference(g);
    }
  }
}

TEST(LowerKernels, CastMatchesReference) {
  for (const Shape& s : {Shape{3, 7, 19}, Shape{1}, Shape{17}}) {
    Graph g;
    const ValueId x = g.add_input("x", s);
    const ValueId scaled = g.add_node(OpKind::mul, {x, random_constant(g, "scale", s, 3, 8.0f)});
    const ValueId i = g.add_node(OpKind::cast, {scaled}, {{"dtype", std::string("i32")}});
    g.mark_output(g.add_node(OpKind::cast, {i}, {{"dtype", std::string("f32")}}));
    expect_matches_reference(g);
  }
}

TEST(LowerKernels, SqrtAndLogOfPositiveInputsMatchReference) {
  for (OpKind op : {OpKind::sqrt, OpKind::log}) {
    Graph g;
    const ValueId x = g.add_input("x", {5, 17});
    const ValueId pos = g.add_node(OpKind::exp, {x}, {}, "pos");  // inputs are N(0, 1)
    g.mark_output(g.add_node(op, {pos}, {}, "op"));
    expect_matches_reference(g);
  }
}

TEST(LowerKernels, PowMaxMinBroadcastMatchReference) {
  for (OpKind op : {OpKind::max, OpKind::min}) {
    expect_matches_reference(single(op, {{3, 1, 5}, {4, 1}}));
    expect_matches_reference(single(op, {{2, 6, 3, 5}, {5}}));
  }
  Graph g;
  const ValueId x = g.add_input("x", {3, 17});
  const ValueId two = random_constant(g, "e", {1}, 3);
  g.mutable_value(two).data = std::make_shared<const std::vector<float>>(std::vector<float>{2.0f});
  g.mark_output(g.add_node(OpKind::pow, {x, two}, {}, "op"));
  expect_matches_reference(g);
  // Constant exponents 3 (products) and 1.5 (std::pow), and a per-element exponent.
  for (float e : {3.0f, 1.5f}) {
    Graph p;
    const ValueId base = p.add_node(OpKind::abs, {p.add_input("x", {3, 17})}, {}, "abs");
    const ValueId ev = random_constant(p, "e", {1}, 3);
    p.mutable_value(ev).data = std::make_shared<const std::vector<float>>(std::vector<float>{e});
    p.mark_output(p.add_node(OpKind::pow, {base, ev}, {}, "op"));
    expect_matches_reference(p);
  }
  Graph q;
  const ValueId qb = q.add_node(OpKind::abs, {q.add_input("x", {3, 17})}, {}, "abs");
  q.mark_output(q.add_node(OpKind::pow, {qb, q.add_input("e", {3, 17})}, {}, "op"));
  expect_matches_reference(q);
}

TEST(LowerKernels, ReductionsMatchReference) {
  for (OpKind op : {OpKind::reduce_mean, OpKind::reduce_sum, OpKind::reduce_max}) {
    for (const Ints& axes : {Ints{-1}, Ints{2, 3}, Ints{1}, Ints{0, 2}, Ints{}}) {
      for (int64_t keep : {0, 1}) {
        expect_matches_reference(single(op, {{2, 3, 7, 17}}, {{"axes", axes}, {"keepdims", keep}}));
      }
    }
  }
}

TEST(LowerKernels, PadModesMatchReference) {
  for (const char* mode : {"constant", "reflect", "edge"}) {
    expect_matches_reference(single(
        OpKind::pad, {{2, 3, 7, 5}},
        {{"pads", Ints{0, 1, 2, 3, 1, 0, 1, 4}}, {"mode", std::string(mode)}, {"value", 0.5}}));
    expect_matches_reference(
        single(OpKind::pad, {{17}}, {{"pads", Ints{3, 1}}, {"mode", std::string(mode)}}));
  }
}

TEST(LowerKernels, GatherExpandWhereMatchReference) {
  {
    Graph g;
    const ValueId data = g.add_input("d", {3, 7, 5});
    const ValueId idx =
        g.add_constant_data("i", ir::Tensor({2, 3}, {0, 6, -1, 3, 3, 1}, ir::DType::i32));
    g.mark_output(g.add_node(OpKind::gather, {data, idx}, {{"axis", int64_t{1}}}, "op"));
    expect_matches_reference(g);
  }
  expect_matches_reference(single(OpKind::expand, {{3, 1, 5}}, {{"shape", Ints{2, 3, 7, 5}}}));
  {
    Graph g;
    const ValueId c = g.add_input("c", {3, 1}, ir::DType::i32);
    g.mutable_value(c).index_bound = 2;
    g.mark_output(g.add_node(OpKind::where, {c, g.add_input("a", {3, 17}), g.add_input("b", {17})},
                             {}, "op"));
    expect_matches_reference(g);
  }
}

// Every reduction on every axis, odd sizes, repeated and negative indices; the last case's
// rows cross the kernel's 4096-column tasks.
TEST(LowerKernels, ScatterMatchesReference) {
  const struct {
    Shape data;
    int64_t axis;
    std::vector<float> idx;
  } cases[] = {{{3, 7, 5}, 1, {0, 6, -1, 3, 3, 1, 6}},
               {{3, 7, 5}, 0, {2, -3, 2, 1}},
               {{3, 7, 5}, -1, {4, 4, 0}},
               {{17}, 0, {16, 0, -17, 5, 5, 5}},
               {{2, 3, 4099}, 1, {1, 1, 0, -1}}};
  for (const auto& c : cases) {
    for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
      Graph g;
      const ValueId data = g.add_input("d", c.data);
      const int64_t n = static_cast<int64_t>(c.idx.size());
      const ValueId idx = g.add_constant_data("i", ir::Tensor({n}, c.idx, ir::DType::i32));
      Shape us = c.data;
      us[static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(us.size()) : c.axis)] = n;
      g.mark_output(g.add_node(OpKind::scatter, {data, idx, g.add_input("u", us)},
                               {{"axis", c.axis}, {"reduction", std::string(reduction)}}, "op"));
      expect_matches_reference(g);
    }
  }
}

// Broadcast patterns whose merged axes and runs cross the kernel's 8192-element blocks: the
// outputs have 24522 elements, rows of 67 or merged rows of 4087.
TEST(LowerKernels, WhereBroadcastsAcrossBlocksAndMergedAxes) {
  const std::vector<std::vector<Shape>> cases = {
      {{1, 1, 61, 67}, {2, 3, 61, 67}, {}},         // a causal mask over heads, a scalar fill
      {{2, 1, 1, 67}, {3, 61, 1}, {2, 3, 61, 67}},  // every operand broadcast differently
      {{2, 3, 61, 67}, {1}, {61, 67}},
      {{1}, {1}, {1}}};
  for (const std::vector<Shape>& shapes : cases) {
    Graph g;
    const ValueId c = g.add_input("c", shapes[0], ir::DType::i32);
    g.mutable_value(c).index_bound = 2;
    g.mark_output(g.add_node(
        OpKind::where, {c, g.add_input("a", shapes[1]), g.add_input("b", shapes[2])}, {}, "op"));
    expect_matches_reference(g);
  }
}

TEST(LowerKernels, CompareMatchesReferenceInEveryMode) {
  for (const char* mode :
       {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    // Small integers, so that equal pairs occur; one operand broadcast along two axes.
    Graph g;
    const ValueId a = g.add_input("a", {3, 7, 17}, ir::DType::i32);
    const ValueId b = g.add_input("b", {7, 1}, ir::DType::i32);
    g.mutable_value(a).index_bound = 3;
    g.mutable_value(b).index_bound = 3;
    g.mark_output(g.add_node(OpKind::compare, {a, b}, {{"mode", std::string(mode)}}, "op"));
    expect_matches_reference(g);
  }
  expect_matches_reference(
      single(OpKind::compare, {{1, 17}, {1}}, {{"mode", std::string("greater")}}));
}

TEST(LowerKernels, CumsumMatchesReferenceOnEveryAxisAndDirection) {
  for (int64_t axis : {0, 1, -1}) {
    for (int64_t exclusive : {0, 1}) {
      for (int64_t reverse : {0, 1}) {
        expect_matches_reference(
            single(OpKind::cumsum, {{3, 7, 17}},
                   {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}}));
      }
    }
  }
  expect_matches_reference(single(OpKind::cumsum, {{1}}, {{"axis", int64_t{0}}}));
}

TEST(LowerKernels, AvgPoolWithoutPaddingInTheDivisorMatchesReference) {
  for (const char* layout : {"nchw", "nhwc"}) {
    const Shape xs = std::string(layout) == "nhwc" ? Shape{2, 7, 9, 3} : Shape{2, 3, 7, 9};
    expect_matches_reference(single(OpKind::avg_pool2d, {xs},
                                    {{"kernel", Ints{3, 3}},
                                     {"stride", Ints{2, 2}},
                                     {"pad", Ints{1, 1}},
                                     {"count_include_pad", int64_t{0}},
                                     {"layout", std::string(layout)}}));
  }
}

TEST(LowerKernels, ParameterisedUnaryOpsFuseWithTheirConstants) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 4, 7, 7});
  const ValueId w = random_constant(g, "w", {5, 4, 3, 3}, 1);
  const ValueId y = g.add_node(OpKind::conv2d, {x, w}, {{"pad", Ints{1, 1}}}, "conv");
  const ValueId c = g.add_node(OpKind::clip, {y}, {{"min", 0.0}, {"max", 0.3}}, "relu6");
  g.mark_output(g.add_node(OpKind::leaky_relu, {c}, {{"alpha", 0.25}}, "leaky"));
  const PipelineConfig config = parse_cuvilpass(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fuse-elementwise\n", "test");
  Compiled compiled = compile(g, config, 1);
  ASSERT_EQ(compiled.graph.nodes().size(), 1u);
  EXPECT_EQ(compiled.graph.nodes()[0].epilogue.size(), 2u);
  EXPECT_EQ(compiled.graph.nodes()[0].epilogue[0].params.b, 0.3f);
  const auto inputs = ir::random_inputs(g, 3);
  const auto want = runtime::reference::interpret(g, inputs);
  runtime::Executor executor(std::move(compiled.plan));
  EXPECT_LT(ir::max_relative_error(executor.run(inputs)[0], want[0]), 1e-5);
}

}  // namespace
}  // namespace cuvil::passes
