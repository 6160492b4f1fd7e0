#include "bench_suite/models/llama3_8b.h"

#include <string>

#include "base/error.h"
#include "bench_suite/models/builder.h"

namespace cuvil::bench::models {

namespace {

void validate(const Llama3Options& o) {
  auto fail = [](const std::string& what) { throw UserError("llama3 options: " + what); };
  auto positive = [](std::string_view name, int64_t v) { require_positive("llama3", name, v); };
  positive("dim", o.dim);
  positive("layers", o.layers);
  positive("heads", o.heads);
  positive("kv_heads", o.kv_heads);
  positive("ffn", o.ffn);
  positive("vocab", o.vocab);
  positive("batch", o.batch);
  positive("seq", o.seq);
  if (o.past < 0) fail("past must be >= 0, got " + std::to_string(o.past));
  if (o.dim % o.heads != 0) {
    fail("dim " + std::to_string(o.dim) + " is not divisible by heads " + std::to_string(o.heads));
  }
  if ((o.dim / o.heads) % 2 != 0) fail("head dim must be even for RoPE");
  if (o.heads % o.kv_heads != 0) {
    fail("heads " + std::to_string(o.heads) + " is not a multiple of kv_heads " +
         std::to_string(o.kv_heads));
  }
  if (!(o.norm_eps > 0.0)) fail("norm_eps must be > 0");
  if (!(o.rope_theta > 0.0)) fail("rope_theta must be > 0");
}

ir::ValueId attention(GraphBuilder& b, const Llama3Options& o, int64_t layer, ir::ValueId x) {
  auto in_attention = b.scope("attention");
  const int64_t head_dim = o.dim / o.heads;
  const int64_t kv_dim = o.kv_heads * head_dim;
  ir::ValueId q = b.split_heads(b.linear(x, "wq", o.dim, false), o.heads, "q_heads");
  ir::ValueId k = b.split_heads(b.linear(x, "wk", kv_dim, false), o.kv_heads, "k_heads");
  ir::ValueId v = b.split_heads(b.linear(x, "wv", kv_dim, false), o.kv_heads, "v_heads");
  const ir::Attrs rope = {{"theta", o.rope_theta}, {"pos_offset", o.past}};
  q = b.op(ir::OpKind::rope, {q}, rope, "q_rope");
  k = b.op(ir::OpKind::rope, {k}, rope, "k_rope");
  if (o.past > 0) {
    const std::string prefix = "layer" + std::to_string(layer);
    const ir::Shape cache = {o.batch, o.kv_heads, o.past, head_dim};
    k = b.concat({b.input(prefix + ".past_k", cache), k}, 2, "k_cache");
    v = b.concat({b.input(prefix + ".past_v", cache), v}, 2, "v_cache");
  }
  const ir::ValueId a = b.merge_heads(b.sdpa(q, k, v, true, "sdpa"), "merge_heads");
  return b.linear(a, "wo", o.dim, false);
}

ir::ValueId feed_forward(GraphBuilder& b, const Llama3Options& o, ir::ValueId x) {
  auto in_ffn = b.scope("feed_forward");
  const ir::ValueId gate = b.unary(ir::OpKind::silu, b.linear(x, "w1", o.ffn, false), "silu");
  const ir::ValueId up = b.linear(x, "w3", o.ffn, false);
  return b.linear(b.binary(ir::OpKind::mul, gate, up, "swiglu"), "w2", o.dim, false);
}

}  // namespace

Llama3Options llama3_tiny() {
  Llama3Options o;
  o.dim = 64;
  o.layers = 2;
  o.heads = 4;
  o.kv_heads = 2;
  o.ffn = 160;
  o.vocab = 97;
  o.seq = 7;
  return o;
}

int64_t llama3_layer_parameter_count(const Llama3Options& o) {
  const int64_t kv_dim = o.kv_heads * (o.dim / o.heads);
  const int64_t attention = 2 * o.dim * o.dim + 2 * o.dim * kv_dim;
  const int64_t ffn = 3 * o.dim * o.ffn;
  const int64_t norms = 2 * o.dim;
  return attention + ffn + norms;
}

int64_t llama3_parameter_count(const Llama3Options& o) {
  int64_t n = o.layers * llama3_layer_parameter_count(o);
  // Untied embedding and head, plus the final norm.
  if (o.with_embedding_and_head) n += 2 * o.vocab * o.dim + o.dim;
  return n;
}

ir::Graph build_llama3(const Llama3Options& o) {
  validate(o);
  GraphBuilder b(o.seed);
  ir::ValueId h;
  if (o.with_embedding_and_head) {
    const ir::ValueId tokens = b.input("tokens", {o.batch, o.seq}, ir::DType::i32);
    b.graph().mutable_value(tokens).index_bound = o.vocab;
    h = b.embedding(tokens, "tok_embeddings", o.vocab, o.dim);
  } else {
    h = b.input("hidden", {o.batch, o.seq, o.dim});
  }
  for (int64_t layer = 0; layer < o.layers; ++layer) {
    auto in_layer = b.scope("layers", layer);
    const ir::ValueId attn = attention(b, o, layer, b.rms_norm(h, "attention_norm", o.norm_eps));
    h = b.binary(ir::OpKind::add, h, attn, "attention_residual");
    const ir::ValueId ffn = feed_forward(b, o, b.rms_norm(h, "ffn_norm", o.norm_eps));
    h = b.binary(ir::OpKind::add, h, ffn, "ffn_residual");
  }
  if (o.with_embedding_and_head) {
    h = b.rms_norm(h, "norm", o.norm_eps);
    h = b.linear(h, "output", o.vocab, false);
  }
  return b.finish({h});
}

}  // namespace cuvil::bench::models
