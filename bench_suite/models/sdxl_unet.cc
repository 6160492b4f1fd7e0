#include "bench_suite/models/sdxl_unet.h"

#include <string>

#include "base/error.h"
#include "bench_suite/models/builder.h"

namespace cuvil::bench::models {

namespace {

constexpr double kResnetEps = 1e-5;
constexpr double kTransformerGroupNormEps = 1e-6;
constexpr double kLayerNormEps = 1e-5;
constexpr int64_t kLatentChannels = 4;
constexpr int64_t kTimeIds = 6;  // original size, crop offset, target size (2 each)
constexpr int64_t kGegluMult = 4;

void validate(const SdxlOptions& o) {
  auto fail = [](const std::string& what) { throw UserError("sdxl options: " + what); };
  auto positive = [](std::string_view name, int64_t v) { require_positive("sdxl", name, v); };
  positive("batch", o.batch);
  positive("latent", o.latent);
  positive("head_dim", o.head_dim);
  positive("context_dim", o.context_dim);
  positive("context_tokens", o.context_tokens);
  positive("layers_per_block", o.layers_per_block);
  positive("norm_groups", o.norm_groups);
  positive("time_embed_dim", o.time_embed_dim);
  positive("addition_time_embed_dim", o.addition_time_embed_dim);
  if (o.channels.empty()) fail("channels must not be empty");
  if (o.transformer_depth.size() != o.channels.size()) {
    fail("transformer_depth has " + std::to_string(o.transformer_depth.size()) + " entries for " +
         std::to_string(o.channels.size()) + " blocks");
  }
  for (size_t i = 0; i < o.channels.size(); ++i) {
    const int64_t c = o.channels[i];
    positive("channels", c);
    if (c % o.norm_groups != 0) {
      fail("channels " + std::to_string(c) + " not divisible by norm_groups " +
           std::to_string(o.norm_groups));
    }
    if (o.transformer_depth[i] < 0) fail("transformer_depth must be >= 0");
    if (o.transformer_depth[i] > 0 && c % o.head_dim != 0) {
      fail("channels " + std::to_string(c) + " not divisible by head_dim " +
           std::to_string(o.head_dim));
    }
  }
  if (o.mid_transformer_depth < 0) fail("mid_transformer_depth must be >= 0");
  if (o.mid_transformer_depth > 0 && o.channels.back() % o.head_dim != 0) {
    fail("mid channels not divisible by head_dim");
  }
  if (sdxl_text_embeds_dim(o) < 1) {
    fail("projection_class_embeddings_input_dim must exceed 6 * addition_time_embed_dim");
  }
  // Each downsample halves the latent; the up path must get back to the same size.
  const int64_t factor = int64_t{1} << (o.channels.size() - 1);
  if (o.latent % factor != 0) {
    fail("latent " + std::to_string(o.latent) + " must be divisible by " + std::to_string(factor));
  }
}

struct Unet {
  const SdxlOptions& o;
  GraphBuilder& b;
  ir::ValueId emb_act;  // silu(time embedding), shared by every resnet's projection
  ir::ValueId context;

  ir::ValueId silu(ir::ValueId x, const std::string& leaf) {
    return b.unary(ir::OpKind::silu, x, leaf);
  }
  ir::ValueId add(ir::ValueId x, ir::ValueId y, const std::string& leaf) {
    return b.binary(ir::OpKind::add, x, y, leaf);
  }

  ir::ValueId resnet(ir::ValueId x, int64_t out_channels) {
    const int64_t in_channels = b.shape(x).at(1);
    ir::ValueId h = silu(b.group_norm(x, "norm1", o.norm_groups, kResnetEps), "act1");
    h = b.conv2d(h, "conv1", out_channels, 3, 1, 1, true);
    ir::ValueId t = b.linear(emb_act, "time_emb_proj", out_channels, true);
    t = b.reshape(t, {o.batch, out_channels, 1, 1}, "time_emb_proj.reshape");
    h = add(h, t, "add_time");
    h = silu(b.group_norm(h, "norm2", o.norm_groups, kResnetEps), "act2");
    h = b.conv2d(h, "conv2", out_channels, 3, 1, 1, true);
    ir::ValueId shortcut = x;
    if (in_channels != out_channels) {
      shortcut = b.conv2d(x, "conv_shortcut", out_channels, 1, 1, 0, true);
    }
    return add(shortcut, h, "add");
  }

  ir::ValueId attention(ir::ValueId x, ir::ValueId kv_source, int64_t channels) {
    const int64_t heads = channels / o.head_dim;
    const ir::ValueId q = b.split_heads(b.linear(x, "to_q", channels, false), heads, "q_heads");
    const ir::ValueId k =
        b.split_heads(b.linear(kv_source, "to_k", channels, false), heads, "k_heads");
    const ir::ValueId v =
        b.split_heads(b.linear(kv_source, "to_v", channels, false), heads, "v_heads");
    const ir::ValueId a = b.merge_heads(b.sdpa(q, k, v, false, "sdpa"), "merge_heads");
    return b.linear(a, "to_out.0", channels, true);
  }

  ir::ValueId geglu(ir::ValueId x, int64_t channels) {
    const int64_t inner = channels * kGegluMult;
    const ir::ValueId p = b.linear(x, "net.0.proj", 2 * inner, true);
    // diffusers' chunk(2): the first half is the value, the second the gate.
    const ir::ValueId value = b.slice(p, 2, 0, inner, "net.0.value");
    const ir::ValueId gate =
        b.unary(ir::OpKind::gelu, b.slice(p, 2, inner, 2 * inner, "net.0.gate"), "net.0.gelu");
    const ir::ValueId h = b.binary(ir::OpKind::mul, value, gate, "net.0.mul");
    return b.linear(h, "net.2", channels, true);
  }

  ir::ValueId transformer_block(ir::ValueId h, int64_t channels) {
    ir::ValueId n = b.layer_norm(h, "norm1", kLayerNormEps);
    {
      auto in_attn = b.scope("attn1");
      n = attention(n, n, channels);
    }
    h = add(h, n, "add1");
    n = b.layer_norm(h, "norm2", kLayerNormEps);
    {
      auto in_attn = b.scope("attn2");
      n = attention(n, context, channels);
    }
    h = add(h, n, "add2");
    n = b.layer_norm(h, "norm3", kLayerNormEps);
    {
      auto in_ff = b.scope("ff");
      n = geglu(n, channels);
    }
    return add(h, n, "add3");
  }

  // Transformer2DModel with use_linear_projection.
  ir::ValueId transformer(ir::ValueId x, int64_t depth) {
    const ir::Shape s = b.shape(x);
    const int64_t c = s[1], height = s[2], width = s[3];
    ir::ValueId h = b.group_norm(x, "norm", o.norm_groups, kTransformerGroupNormEps);
    h = b.transpose(h, {0, 2, 3, 1}, "to_tokens.transpose");
    h = b.reshape(h, {o.batch, height * width, c}, "to_tokens.reshape");
    h = b.linear(h, "proj_in", c, true);
    for (int64_t d = 0; d < depth; ++d) {
      auto in_block = b.scope("transformer_blocks", d);
      h = transformer_block(h, c);
    }
    h = b.linear(h, "proj_out", c, true);
    h = b.reshape(h, {o.batch, height, width, c}, "to_image.reshape");
    h = b.transpose(h, {0, 3, 1, 2}, "to_image.transpose");
    return add(h, x, "add");
  }

  ir::ValueId resnet_and_attention(ir::ValueId h, int64_t index, int64_t channels, int64_t depth) {
    {
      auto in_resnet = b.scope("resnets", index);
      h = resnet(h, channels);
    }
    if (depth > 0) {
      auto in_attention = b.scope("attentions", index);
      h = transformer(h, depth);
    }
    return h;
  }
};

// Builds the time embedding plus the SDXL "text_time" added embedding.
ir::ValueId time_embedding(GraphBuilder& b, const SdxlOptions& o, ir::ValueId timestep,
                           ir::ValueId text_embeds, ir::ValueId time_ids) {
  auto mlp = [&](ir::ValueId x, const std::string& scope) {
    auto in_mlp = b.scope(scope);
    x = b.linear(x, "linear_1", o.time_embed_dim, true);
    x = b.unary(ir::OpKind::silu, x, "act");
    return b.linear(x, "linear_2", o.time_embed_dim, true);
  };
  const ir::ValueId t = mlp(timestep, "time_embedding");
  const ir::ValueId added =
      mlp(b.concat({text_embeds, time_ids}, 1, "add_embeds"), "add_embedding");
  return b.binary(ir::OpKind::add, t, added, "emb");
}

}  // namespace

int64_t sdxl_text_embeds_dim(const SdxlOptions& o) {
  return o.projection_class_embeddings_input_dim - kTimeIds * o.addition_time_embed_dim;
}

SdxlOptions sdxl_tiny() {
  SdxlOptions o;
  o.latent = 16;
  o.channels = {32, 64, 128};
  o.transformer_depth = {0, 1, 2};
  o.mid_transformer_depth = 1;
  o.head_dim = 16;
  o.context_dim = 32;
  o.context_tokens = 7;
  o.norm_groups = 8;
  o.time_embed_dim = 128;
  o.addition_time_embed_dim = 8;
  o.projection_class_embeddings_input_dim = 64 + kTimeIds * 8;
  return o;
}

ir::Graph build_sdxl_unet(const SdxlOptions& o) {
  validate(o);
  GraphBuilder b(o.seed);
  const int64_t n_blocks = static_cast<int64_t>(o.channels.size());
  ir::ValueId h = b.input("latent", {o.batch, kLatentChannels, o.latent, o.latent});
  const ir::ValueId timestep = b.input("timestep_features", {o.batch, o.channels[0]});
  const ir::ValueId context = b.input("text_context", {o.batch, o.context_tokens, o.context_dim});
  const ir::ValueId text_embeds = b.input("text_embeds", {o.batch, sdxl_text_embeds_dim(o)});
  const ir::ValueId time_ids =
      b.input("time_ids_features", {o.batch, kTimeIds * o.addition_time_embed_dim});

  const ir::ValueId emb = time_embedding(b, o, timestep, text_embeds, time_ids);
  Unet u{o, b, b.unary(ir::OpKind::silu, emb, "emb_act"), context};

  h = b.conv2d(h, "conv_in", o.channels[0], 3, 1, 1, true);
  std::vector<ir::ValueId> skips = {h};
  for (int64_t i = 0; i < n_blocks; ++i) {
    auto in_block = b.scope("down_blocks", i);
    const int64_t c = o.channels[static_cast<size_t>(i)];
    const int64_t depth = o.transformer_depth[static_cast<size_t>(i)];
    for (int64_t j = 0; j < o.layers_per_block; ++j) {
      h = u.resnet_and_attention(h, j, c, depth);
      skips.push_back(h);
    }
    if (i + 1 < n_blocks) {
      h = b.conv2d(h, "downsamplers.0.conv", c, 3, 2, 1, true);
      skips.push_back(h);
    }
  }
  {
    auto in_mid = b.scope("mid_block");
    const int64_t c = o.channels.back();
    {
      auto in_resnet = b.scope("resnets", 0);
      h = u.resnet(h, c);
    }
    if (o.mid_transformer_depth > 0) {
      auto in_attention = b.scope("attentions", 0);
      h = u.transformer(h, o.mid_transformer_depth);
    }
    auto in_resnet = b.scope("resnets", 1);
    h = u.resnet(h, c);
  }
  for (int64_t i = 0; i < n_blocks; ++i) {
    auto in_block = b.scope("up_blocks", i);
    const size_t level = static_cast<size_t>(n_blocks - 1 - i);
    const int64_t c = o.channels[level];
    const int64_t depth = o.transformer_depth[level];
    for (int64_t j = 0; j <= o.layers_per_block; ++j) {
      const ir::ValueId skip = skips.back();
      skips.pop_back();
      h = b.concat({h, skip}, 1, "skip_concat." + std::to_string(j));
      h = u.resnet_and_attention(h, j, c, depth);
    }
    if (i + 1 < n_blocks) {
      h = b.op(ir::OpKind::upsample_nearest2d, {h},
               {{"scale", int64_t{2}}, {"layout", std::string("nchw")}}, "upsamplers.0.upsample");
      h = b.conv2d(h, "upsamplers.0.conv", c, 3, 1, 1, true);
    }
  }
  h = b.unary(ir::OpKind::silu, b.group_norm(h, "conv_norm_out", o.norm_groups, kResnetEps),
              "conv_act");
  h = b.conv2d(h, "conv_out", kLatentChannels, 3, 1, 1, true);
  return b.finish({h});
}

}  // namespace cuvil::bench::models
