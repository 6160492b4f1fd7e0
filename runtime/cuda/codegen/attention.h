// Fused attention generator (flash-style: one pass over K/V with an online softmax, the S x S
// score matrix never exists in memory). q[B, Hq, Sq, D], k[B, Hkv, Skv, D], v[B, Hkv, Skv, Dv]
// -> o[B, Hq, Sq, Dv] through per-dimension strides, so BHSD and BSHD layouts both work.
// Grouped-query: query head h reads kv head h / (Hq / Hkv). Causal with Sq <= Skv aligns queries
// to the END: query i attends key j iff j <= i + (Skv - Sq) (decode with a KV cache). Cross
// attention: Skv != Sq, non-causal. fp32 math, any Sq/Skv; D and Dv are compiled in.
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/cuda/codegen/kernel_source.h"

namespace cuvil::runtime::cuda::codegen {

struct AttentionTiles {
  int block_q = 64;   // queries per thread block (one warp per block_q / warps rows)
  int block_kv = 64;  // keys/values staged in shared memory per step
  int warps = 4;
  // bf16/f16 only: QK^T and PV on tensor cores (mma.sync m16n8k16, FlashAttention-2 layout);
  // needs block_q = 16 x warps and head dims / block_kv multiples of 16. Off: fp32 CUDA cores.
  bool tensor_cores = false;
  bool operator==(const AttentionTiles&) const = default;
};

struct AttentionProblem {
  int64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1;
  int64_t head_dim = 64, head_dim_v = 64;
  bool causal = false;
  std::optional<double> scale;     // default 1/sqrt(head_dim)
  ElemType type = ElemType::bf16;  // q, k, v and o
};

struct AttentionKernelParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  int64_t batch = 0, heads_q = 0, heads_kv = 0, seq_q = 0, seq_kv = 0;
  // Element strides of (batch, head, seq) for each tensor; the last dimension is contiguous.
  int64_t q_stride[3] = {0, 0, 0}, k_stride[3] = {0, 0, 0}, v_stride[3] = {0, 0, 0};
  int64_t o_stride[3] = {0, 0, 0};
  double scale = 0;
};

void validate_attention(const AttentionProblem& problem, const AttentionTiles& tiles);
KernelSource attention_source(const AttentionProblem& problem, const AttentionTiles& tiles);
LaunchGeometry attention_geometry(const AttentionProblem& problem, const AttentionTiles& tiles);
// Contiguous BHSD params for `problem`.
AttentionKernelParams attention_dense_params(const AttentionProblem& problem, const void* q,
                                             const void* k, const void* v, void* o);

}  // namespace cuvil::runtime::cuda::codegen
