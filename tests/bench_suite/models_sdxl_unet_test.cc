#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "bench_suite/models/sdxl_unet.h"
#include "models_test_util.h"
#include "passes/ir/verifier.h"

namespace cuvil::bench::models {
namespace {

using testing::any_constant_materialised;
using testing::count_nodes_ending_with;
using testing::expect_sane;
using testing::find_node;
using testing::find_value;

TEST(SdxlUnet, FullModelHasDiffusersParameterCount) {
  const ir::Graph g = build_sdxl_unet({});
  EXPECT_EQ(g.parameter_count(), 2'567'463'684);
  EXPECT_LT(std::fabs(static_cast<double>(g.parameter_count()) - 2.57e9), 2.57e6);
}

TEST(SdxlUnet, BuildingDoesNotMaterialiseWeights) {
  const ir::Graph g = build_sdxl_unet({});
  EXPECT_FALSE(any_constant_materialised(g));
}

TEST(SdxlUnet, FullModelInputsAndOutput) {
  const ir::Graph g = build_sdxl_unet({});
  ir::verify(g);
  ASSERT_EQ(g.inputs().size(), 5u);
  const std::vector<std::pair<std::string, ir::Shape>> expected = {
      {"latent", {1, 4, 128, 128}},
      {"timestep_features", {1, 320}},
      {"text_context", {1, 77, 2048}},
      {"text_embeds", {1, 1280}},
      {"time_ids_features", {1, 1536}}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(g.value(g.inputs()[i]).name, expected[i].first);
    EXPECT_EQ(g.value(g.inputs()[i]).shape, expected[i].second) << expected[i].first;
  }
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).shape, (ir::Shape{1, 4, 128, 128}));
}

TEST(SdxlUnet, FullModelHasSeventyTransformerBlocks) {
  // down 2x2 + 2x10, mid 10, up 3x10 + 3x2.
  const ir::Graph g = build_sdxl_unet({});
  EXPECT_EQ(count_nodes_ending_with(g, ".attn1.sdpa"), 70);
  EXPECT_EQ(count_nodes_ending_with(g, ".attn2.sdpa"), 70);
  EXPECT_EQ(find_node(g, "down_blocks.0.attentions.0.norm"), nullptr);
  EXPECT_EQ(find_node(g, "down_blocks.2.downsamplers.0.conv"), nullptr);
  EXPECT_EQ(find_node(g, "up_blocks.2.upsamplers.0.conv"), nullptr);
}

TEST(SdxlUnet, AttentionUsesSixtyFourWideHeads) {
  const ir::Graph g = build_sdxl_unet({});
  const ir::Node* self = find_node(g, "mid_block.attentions.0.transformer_blocks.9.attn1.sdpa");
  const ir::Node* cross = find_node(g, "up_blocks.1.attentions.2.transformer_blocks.1.attn2.sdpa");
  ASSERT_TRUE(self && cross);
  EXPECT_EQ(g.value(self->inputs[0]).shape, (ir::Shape{1, 20, 32 * 32, 64}));
  EXPECT_EQ(self->attrs.get_int("causal", 1), 0);
  EXPECT_EQ(g.value(cross->inputs[0]).shape, (ir::Shape{1, 10, 64 * 64, 64}));
  EXPECT_EQ(g.value(cross->inputs[1]).shape, (ir::Shape{1, 10, 77, 64}));
}

TEST(SdxlUnet, UpBlocksConcatenateSkipsInReverse) {
  const ir::Graph g = build_sdxl_unet({});
  const ir::Node* first = find_node(g, "up_blocks.0.skip_concat.0");
  const ir::Node* last = find_node(g, "up_blocks.2.skip_concat.2");
  ASSERT_TRUE(first && last);
  EXPECT_EQ(g.value(first->output).shape, (ir::Shape{1, 2560, 32, 32}));
  EXPECT_EQ(g.value(find_node(g, "up_blocks.0.skip_concat.2")->output).shape,
            (ir::Shape{1, 1920, 32, 32}));
  EXPECT_EQ(g.value(last->output).shape, (ir::Shape{1, 640, 128, 128}));
}

TEST(SdxlUnet, BatchTwoAt512Pixels) {
  SdxlOptions o;
  o.batch = 2;
  o.latent = 64;
  const ir::Graph g = build_sdxl_unet(o);
  ir::verify(g);
  EXPECT_EQ(g.value(g.outputs()[0]).shape, (ir::Shape{2, 4, 64, 64}));
}

TEST(SdxlUnet, SameOptionsBuildSameWeights) {
  const ir::Graph a = build_sdxl_unet(sdxl_tiny());
  const ir::Graph b = build_sdxl_unet(sdxl_tiny());
  for (const char* name :
       {"conv_in.weight", "mid_block.resnets.1.time_emb_proj.weight",
        "up_blocks.1.attentions.0.transformer_blocks.0.ff.net.0.proj.weight", "conv_out.bias"}) {
    EXPECT_EQ(a.constant_data(find_value(a, name)), b.constant_data(find_value(b, name))) << name;
  }
}

TEST(SdxlUnet, SeedChangesWeights) {
  SdxlOptions other = sdxl_tiny();
  other.seed = 5;
  const ir::Graph a = build_sdxl_unet(sdxl_tiny());
  const ir::Graph b = build_sdxl_unet(other);
  const char* name = "down_blocks.1.attentions.0.transformer_blocks.0.attn2.to_k.weight";
  EXPECT_NE(a.constant_data(find_value(a, name)), b.constant_data(find_value(b, name)));
}

TEST(SdxlUnet, TinyRunsThroughReferenceWithSaneOutput) {
  const ir::Graph g = build_sdxl_unet(sdxl_tiny());
  const auto out = runtime::reference::interpret(g, ir::random_inputs(g, 5));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (ir::Shape{1, 4, 16, 16}));
  expect_sane(out[0]);
}

TEST(SdxlUnet, TinyBatchTwoOddContextRunsThroughReference) {
  SdxlOptions o = sdxl_tiny();
  o.batch = 2;
  o.latent = 12;
  o.context_tokens = 3;
  const ir::Graph g = build_sdxl_unet(o);
  const auto out = runtime::reference::interpret(g, ir::random_inputs(g, 9));
  EXPECT_EQ(out[0].shape, (ir::Shape{2, 4, 12, 12}));
  expect_sane(out[0]);
}

TEST(SdxlUnet, RejectsBadOptions) {
  SdxlOptions o;
  o.latent = 130;  // not divisible by 4: the skip connections would not line up
  EXPECT_THROW(build_sdxl_unet(o), UserError);
  o = {};
  o.transformer_depth = {0, 2};
  EXPECT_THROW(build_sdxl_unet(o), UserError);
  o = {};
  o.norm_groups = 7;
  EXPECT_THROW(build_sdxl_unet(o), UserError);
  o = {};
  o.head_dim = 48;
  EXPECT_THROW(build_sdxl_unet(o), UserError);
  o = {};
  o.projection_class_embeddings_input_dim = 1536;
  EXPECT_THROW(build_sdxl_unet(o), UserError);
}

}  // namespace
}  // namespace cuvil::bench::models
