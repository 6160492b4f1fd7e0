// Llama-3-8B (Meta's reference architecture) as an IR graph with deterministic random weights:
// prefill (past = 0) and decode against a KV cache (past > 0).
#pragma once

#include <cstdint>

#include "passes/ir/graph.h"

namespace cuvil::bench::models {

struct Llama3Options {
  int64_t dim = 4096, layers = 32, heads = 32, kv_heads = 8, ffn = 14336, vocab = 128256;
  double norm_eps = 1e-5, rope_theta = 500000.0;
  int64_t batch = 1, seq = 128;
  // Tokens already in the KV cache: layer i reads inputs "layer{i}.past_k" / "layer{i}.past_v"
  // [batch, kv_heads, past, head_dim] (already rotated) and attends to past + seq keys.
  int64_t past = 0;
  // true: input "tokens" [batch, seq] i32 -> logits [batch, seq, vocab].
  // false: input "hidden" [batch, seq, dim] -> hidden state after the last layer (no final norm).
  bool with_embedding_and_head = true;
  uint64_t seed = 1;
};

// Same topology at toy size: dim 64, 2 layers, 4 heads (2 kv heads), ffn 160, vocab 97, seq 7.
Llama3Options llama3_tiny();

// Bad options throw UserError.
ir::Graph build_llama3(const Llama3Options& options);

// Parameters of one decoder layer (q/k/v/o, SwiGLU FFN, two RMSNorms); 218,112,000 for 8B.
int64_t llama3_layer_parameter_count(const Llama3Options& options);
// Whole model as built: layers, plus embedding, final norm and head when present
// (8,030,261,248 for 8B).
int64_t llama3_parameter_count(const Llama3Options& options);

}  // namespace cuvil::bench::models
