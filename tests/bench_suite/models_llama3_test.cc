#include <gtest/gtest.h>

#include "base/error.h"
#include "bench_suite/models/llama3_8b.h"
#include "models_test_util.h"
#include "passes/ir/verifier.h"

namespace cuvil::bench::models {
namespace {

using testing::any_constant_materialised;
using testing::count_nodes_ending_with;
using testing::expect_sane;
using testing::find_node;
using testing::find_value;

TEST(Llama3, LayerParameterCountClosedForm) {
  EXPECT_EQ(llama3_layer_parameter_count({}), 218'112'000);
}

TEST(Llama3, FullModelHasEightBillionParameters) {
  const ir::Graph g = build_llama3({});
  EXPECT_EQ(g.parameter_count(), 8'030'261'248);
  EXPECT_EQ(llama3_parameter_count({}), 8'030'261'248);
  EXPECT_FALSE(any_constant_materialised(g));
}

TEST(Llama3, FullModelHasThirtyTwoLayers) {
  const ir::Graph g = build_llama3({});
  EXPECT_EQ(count_nodes_ending_with(g, ".attention.sdpa"), 32);
  EXPECT_EQ(count_nodes_ending_with(g, ".feed_forward.w2"), 32);
}

TEST(Llama3, OneLayerGraphHoldsOneLayerOfParameters) {
  Llama3Options o;
  o.layers = 1;
  o.with_embedding_and_head = false;
  const ir::Graph g = build_llama3(o);
  EXPECT_EQ(g.parameter_count(), llama3_layer_parameter_count(o));
}

TEST(Llama3, FullPrefillShapes) {
  const ir::Graph g = build_llama3({});
  ir::verify(g);
  ASSERT_EQ(g.inputs().size(), 1u);
  const ir::Value& tokens = g.value(g.inputs()[0]);
  EXPECT_EQ(tokens.name, "tokens");
  EXPECT_EQ(tokens.dtype, ir::DType::i32);
  EXPECT_EQ(tokens.index_bound, 128256);
  EXPECT_EQ(tokens.shape, (ir::Shape{1, 128}));
  EXPECT_EQ(g.value(g.outputs()[0]).shape, (ir::Shape{1, 128, 128256}));
  const ir::Node* sdpa = find_node(g, "layers.5.attention.sdpa");
  ASSERT_NE(sdpa, nullptr);
  EXPECT_EQ(g.value(sdpa->inputs[0]).shape, (ir::Shape{1, 32, 128, 128}));
  EXPECT_EQ(g.value(sdpa->inputs[1]).shape, (ir::Shape{1, 8, 128, 128}));
  EXPECT_EQ(sdpa->attrs.get_int("causal", 0), 1);
}

TEST(Llama3, FullDecodeReadsKvCachePerLayer) {
  Llama3Options o;
  o.batch = 2;
  o.seq = 1;
  o.past = 4095;
  const ir::Graph g = build_llama3(o);
  ir::verify(g);
  ASSERT_EQ(g.inputs().size(), 1u + 2 * 32);
  EXPECT_EQ(g.value(g.inputs()[1]).name, "layer0.past_k");
  EXPECT_EQ(g.value(g.inputs()[2]).name, "layer0.past_v");
  EXPECT_EQ(g.value(g.inputs()[64]).name, "layer31.past_v");
  EXPECT_EQ(g.value(g.inputs()[64]).shape, (ir::Shape{2, 8, 4095, 128}));
  EXPECT_EQ(g.value(g.outputs()[0]).shape, (ir::Shape{2, 1, 128256}));
  const ir::Node* rope = find_node(g, "layers.0.attention.k_rope");
  ASSERT_NE(rope, nullptr);
  EXPECT_EQ(rope->attrs.get_int("pos_offset", 0), 4095);
  EXPECT_DOUBLE_EQ(rope->attrs.get_float("theta", 0), 500000.0);
}

TEST(Llama3, WithoutHeadMapsHiddenToHidden) {
  Llama3Options o = llama3_tiny();
  o.with_embedding_and_head = false;
  o.batch = 3;
  const ir::Graph g = build_llama3(o);
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.inputs()[0]).name, "hidden");
  EXPECT_EQ(g.value(g.inputs()[0]).shape, (ir::Shape{3, 7, 64}));
  EXPECT_EQ(g.value(g.outputs()[0]).shape, (ir::Shape{3, 7, 64}));
  EXPECT_EQ(g.parameter_count(), 2 * llama3_layer_parameter_count(o));
  EXPECT_EQ(find_value(g, "norm.weight"), ir::kNoValue);
}

TEST(Llama3, TinyDecodeShapes) {
  Llama3Options o = llama3_tiny();
  o.seq = 1;
  o.past = 5;
  const ir::Graph g = build_llama3(o);
  ir::verify(g);
  EXPECT_EQ(g.value(g.inputs()[1]).shape, (ir::Shape{1, 2, 5, 16}));
  const ir::Node* sdpa = find_node(g, "layers.1.attention.sdpa");
  ASSERT_NE(sdpa, nullptr);
  EXPECT_EQ(g.value(sdpa->inputs[1]).shape, (ir::Shape{1, 2, 6, 16}));
  EXPECT_EQ(g.value(g.outputs()[0]).shape, (ir::Shape{1, 1, 97}));
}

TEST(Llama3, SameOptionsBuildSameWeights) {
  const ir::Graph a = build_llama3(llama3_tiny());
  const ir::Graph b = build_llama3(llama3_tiny());
  for (const char* name : {"tok_embeddings.weight", "layers.1.attention.wk.weight",
                           "layers.0.ffn_norm.weight", "output.weight"}) {
    EXPECT_EQ(a.constant_data(find_value(a, name)), b.constant_data(find_value(b, name))) << name;
  }
}

TEST(Llama3, LayerWeightsDoNotDependOnLayerCount) {
  Llama3Options one = llama3_tiny();
  one.layers = 1;
  const ir::Graph a = build_llama3(llama3_tiny());
  const ir::Graph b = build_llama3(one);
  const char* name = "layers.0.feed_forward.w1.weight";
  EXPECT_EQ(a.constant_data(find_value(a, name)), b.constant_data(find_value(b, name)));
}

TEST(Llama3, SeedChangesWeights) {
  Llama3Options other = llama3_tiny();
  other.seed = 99;
  const ir::Graph a = build_llama3(llama3_tiny());
  const ir::Graph b = build_llama3(other);
  const char* name = "layers.0.attention.wq.weight";
  EXPECT_NE(a.constant_data(find_value(a, name)), b.constant_data(find_value(b, name)));
}

TEST(Llama3, TinyPrefillRunsThroughReferenceWithSaneLogits) {
  const ir::Graph g = build_llama3(llama3_tiny());
  const auto out = runtime::reference::interpret(g, ir::random_inputs(g, 11));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (ir::Shape{1, 7, 97}));
  expect_sane(out[0]);
}

// Decoding token 7 against the cache of a 6-token prefill must give the 7-token prefill's last
// logits: checks the cache layout, RoPE offsets and causal alignment together.
TEST(Llama3, DecodeWithCacheMatchesPrefill) {
  const Llama3Options tiny = llama3_tiny();
  const std::vector<float> tokens = {3, 14, 15, 92, 65, 35, 89};

  const ir::Graph full = build_llama3(tiny);
  const auto full_out =
      runtime::reference::interpret(full, {ir::Tensor({1, 7}, tokens, ir::DType::i32)});

  Llama3Options first = tiny;
  first.seq = 6;
  ir::Graph prefix = build_llama3(first);
  for (int64_t layer = 0; layer < tiny.layers; ++layer) {
    const std::string p = "layers." + std::to_string(layer) + ".attention.";
    prefix.mark_output(find_value(prefix, p + "k_rope"));
    prefix.mark_output(find_value(prefix, p + "v_heads.transpose"));
  }
  auto prefix_out = runtime::reference::interpret(
      prefix,
      {ir::Tensor({1, 6}, std::vector<float>(tokens.begin(), tokens.begin() + 6), ir::DType::i32)});

  Llama3Options step = tiny;
  step.seq = 1;
  step.past = 6;
  const ir::Graph decode = build_llama3(step);
  std::vector<ir::Tensor> inputs = {ir::Tensor({1, 1}, {tokens.back()}, ir::DType::i32)};
  for (size_t i = 1; i < prefix_out.size(); ++i) inputs.push_back(prefix_out[i]);
  const auto decode_out = runtime::reference::interpret(decode, inputs);

  const int64_t vocab = tiny.vocab;
  ir::Tensor last({1, 1, vocab});
  std::copy(full_out[0].data.end() - vocab, full_out[0].data.end(), last.data.begin());
  EXPECT_LT(ir::max_relative_error(decode_out[0], last), 1e-4);
}

TEST(Llama3, RejectsBadOptions) {
  Llama3Options o;
  o.heads = 5;
  EXPECT_THROW(build_llama3(o), UserError);
  o = {};
  o.kv_heads = 3;
  EXPECT_THROW(build_llama3(o), UserError);
  o = {};
  o.seq = 0;
  EXPECT_THROW(build_llama3(o), UserError);
  o = {};
  o.past = -1;
  EXPECT_THROW(build_llama3(o), UserError);
}

}  // namespace
}  // namespace cuvil::bench::models
