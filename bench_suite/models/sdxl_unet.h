// The SDXL base UNet (diffusers UNet2DConditionModel, stabilityai/stable-diffusion-xl-base-1.0)
// as an IR graph with deterministic random weights. Sinusoidal timestep/time-id projections are
// computed outside the graph and arrive as inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "passes/ir/graph.h"

namespace cuvil::bench::models {

struct SdxlOptions {
  int64_t batch = 1;
  int64_t latent = 128;  // image / 8
  std::vector<int64_t> channels = {320, 640, 1280};
  // Transformer blocks per attention in each down block (0: a plain DownBlock2D); up blocks use
  // the reverse.
  std::vector<int64_t> transformer_depth = {0, 2, 10};
  int64_t mid_transformer_depth = 10;
  int64_t head_dim = 64;
  int64_t context_dim = 2048, context_tokens = 77;
  int64_t layers_per_block = 2;  // resnets per down block; up blocks have one more
  int64_t norm_groups = 32;
  int64_t time_embed_dim = 1280 /* 4*320 */, addition_time_embed_dim = 256,
          projection_class_embeddings_input_dim = 2816;  // pooled text (1280) + 6 time ids
  uint64_t seed = 1;
};

// Same topology at toy size: channels {32, 64, 128}, depth {0, 1, 2}, mid 1, head dim 16,
// context 7 x 32, latent 16, 8 groups.
SdxlOptions sdxl_tiny();

// Inputs, in order: "latent" [B, 4, latent, latent], "timestep_features" [B, channels[0]],
// "text_context" [B, context_tokens, context_dim], "text_embeds" [B, projection_dim -
// 6*addition_time_embed_dim], "time_ids_features" [B, 6*addition_time_embed_dim].
// Output: the noise prediction [B, 4, latent, latent]. Bad options throw UserError.
ir::Graph build_sdxl_unet(const SdxlOptions& options);

// Width of "text_embeds" (the pooled text embedding): 1280 for SDXL.
int64_t sdxl_text_embeds_dim(const SdxlOptions& options);

}  // namespace cuvil::bench::models
