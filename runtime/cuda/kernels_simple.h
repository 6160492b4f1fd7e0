// The CUDA runtime's own NVRTC kernels for ops the generators (runtime/cuda/codegen) do not
// cover, and simple fallbacks: elementwise with broadcasting (and epilogue chains), type
// conversion, softmax over any axis, layer/RMS/group/batch norm, pooling, nearest upsample,
// strided copies (concat, slice), transpose, RoPE, embedding and a one-warp-per-query attention.
// One source text, compiled once per device architecture; every kernel takes one params struct by
// value whose fields are all 8 bytes wide (host and device layouts agree). Host-only header.
#pragma once

#include <cstdint>
#include <string>

namespace cuvil::runtime::cuda::simple {

inline constexpr int kMaxRank = 8;
inline constexpr unsigned kThreads = 256;  // threads per block of every grid-stride kernel

// Elementwise op codes shared with the device source.
enum EwOp : int64_t {
  kAdd = 0,
  kSub = 1,
  kMul = 2,
  kDiv = 3,
  kRelu = 10,
  kSilu = 11,
  kGelu = 12,
  kSigmoid = 13
};

// y[i] = op(a[i], b[i]) (or op(a[i])) over `total` output elements, a and b read through
// per-dimension element strides (0 = broadcast). a may be y (in-place epilogue step).
struct EwParams {
  const float* a;
  const float* b;
  float* y;
  int64_t total, rank, op;
  int64_t dims[kMaxRank];
  int64_t a_strides[kMaxRank];
  int64_t b_strides[kMaxRank];
};

// Storage type codes: 0 f32, 1 bf16, 2 f16.
struct ConvertParams {
  const void* src;
  void* dst;
  int64_t count, from, to;
};

// Softmax over the middle dimension of [outer, axis, inner]; one block per (outer, inner) row.
struct SoftmaxParams {
  const float* x;
  float* y;
  int64_t outer, axis, inner;
};

// layer_norm (kind 0: gamma, beta) or rms_norm (kind 1: gamma) over rows of `dim`; one block per
// row.
struct RowNormParams {
  const float* x;
  float* y;
  const float* gamma;
  const float* beta;
  int64_t rows, dim, kind;
  double eps;
};

// group_norm over (C/groups, H, W) per (n, group); one block per (n, group).
struct GroupNormParams {
  const float* x;
  float* y;
  const float* gamma;
  const float* beta;
  int64_t n, c, spatial, groups, nhwc;
  double eps;
};

// batch_norm (inference): y = (x - mean) / sqrt(var + eps) * scale + bias, channel of element i
// is (i / inner) % channels (nchw: inner = H*W; nhwc: inner = 1).
struct BatchNormParams {
  const float* x;
  float* y;
  const float* scale;
  const float* bias;
  const float* mean;
  const float* var;
  int64_t total, channels, inner;
  double eps;
};

// max (is_max 1) or average (count_include_pad) pooling; one thread per output element.
struct PoolParams {
  const float* x;
  float* y;
  int64_t n, c, h, w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  int64_t nhwc, is_max;
};

// global average pool -> [N, C]; one thread per (n, c).
struct GlobalPoolParams {
  const float* x;
  float* y;
  int64_t n, c, spatial, nhwc;
};

struct UpsampleParams {
  const float* x;
  float* y;
  int64_t n, c, h, w, scale, nhwc;
};

// dst[o * dst_inner + dst_offset + r] = src[o * src_inner + src_offset + r] for o < outer,
// r < copy_inner (concat: one launch per input; slice).
struct StridedCopyParams {
  const float* src;
  float* dst;
  int64_t outer, copy_inner, src_inner, src_offset, dst_inner, dst_offset;
};

// y (dims out_dims, contiguous) = x read through in_strides (element strides of x for each output
// dimension).
struct TransposeParams {
  const float* x;
  float* y;
  int64_t total, rank;
  int64_t out_dims[kMaxRank];
  int64_t in_strides[kMaxRank];
};

// Rotate-half RoPE on x[B, H, S, D]; one thread per (b, h, s, d < D/2). Angles in double.
struct RopeParams {
  const float* x;
  float* y;
  int64_t batch, heads, seq, dim, pos_offset;
  double theta;
};

// y[r, :] = table[ids[r], :] (ids stored as exact floats); an id out of range yields NaN.
struct EmbeddingParams {
  const float* table;
  const float* ids;
  float* y;
  int64_t rows, dim, vocab;
};

// q[B,Hq,Sq,D], k[B,Hkv,Skv,D], v[B,Hkv,Skv,Dv] -> o[B,Hq,Sq,Dv]; one warp per query row with an
// online softmax; D, Dv <= 256. Grid (ceil(Sq / kSdpaWarps), Hq, B), block 32 * kSdpaWarps.
inline constexpr unsigned kSdpaWarps = 4;
inline constexpr int64_t kSdpaMaxHeadDim = 256;
struct SdpaParams {
  const float* q;
  const float* k;
  const float* v;
  float* o;
  int64_t batch, heads_q, heads_kv, seq_q, seq_kv, dim, dim_v, causal;
  double scale;
};

// Kernel entry points in the source, in this order.
inline constexpr const char* kKernelNames[] = {
    "cuvil_ew",         "cuvil_convert",      "cuvil_softmax",   "cuvil_row_norm",
    "cuvil_group_norm", "cuvil_batch_norm",   "cuvil_pool",      "cuvil_global_pool",
    "cuvil_upsample",   "cuvil_strided_copy", "cuvil_transpose", "cuvil_rope",
    "cuvil_embedding",  "cuvil_sdpa"};

// The full CUDA C++ source (self-contained, no includes).
const std::string& source();

// Blocks for a grid-stride kernel over `total` elements (at least 1, at most 2^20: every
// thread loops).
unsigned grid_for(int64_t total);

}  // namespace cuvil::runtime::cuda::simple
