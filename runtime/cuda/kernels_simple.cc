#include "runtime/cuda/kernels_simple.h"

#include <algorithm>

namespace cuvil::runtime::cuda::simple {

unsigned grid_for(int64_t total) {
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, int64_t{1} << 20));
}

namespace {

constexpr const char* kSource = R"CUDA(// cuvil simple kernels (runtime/cuda/kernels_simple.h)
typedef long long i64;
#define CUVIL_MAX_RANK 8
#define CUVIL_NEG_INF __int_as_float(0xff800000)
#define CUVIL_GRID_STRIDE(i, total) \
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (total); \
       i += (i64)gridDim.x * blockDim.x)

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide reductions; every thread gets the result. `shared` holds 32 floats. The leading
// barrier lets a block call these back to back.
__device__ float block_sum(float v, float* shared) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = (lane < warps) ? shared[lane] : 0.f;
  return warp_sum(v);
}
__device__ float block_max(float v, float* shared) {
  v = warp_max(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = (lane < warps) ? shared[lane] : CUVIL_NEG_INF;
  return warp_max(v);
}

__device__ __forceinline__ float apply_op(i64 op, float a, float b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 10: return a > 0.f ? a : 0.f;
    case 11: return a / (1.f + expf(-a));
    case 12: return 0.5f * a * (1.f + erff(a * 0.7071067811865475f));
    case 13: return 1.f / (1.f + expf(-a));
  }
  return __int_as_float(0x7fc00000);
}

struct EwParams {
  const float* a; const float* b; float* y;
  i64 total, rank, op;
  i64 dims[CUVIL_MAX_RANK]; i64 a_strides[CUVIL_MAX_RANK]; i64 b_strides[CUVIL_MAX_RANK];
};
extern "C" __global__ void cuvil_ew(EwParams p) {
  CUVIL_GRID_STRIDE(i, p.total) {
    i64 rest = i, ia = 0, ib = 0;
    for (int d = (int)p.rank - 1; d >= 0; --d) {
      const i64 coord = rest % p.dims[d];
      rest /= p.dims[d];
      ia += coord * p.a_strides[d];
      ib += coord * p.b_strides[d];
    }
    const float b = p.op < 10 ? p.b[ib] : 0.f;
    p.y[i] = apply_op(p.op, p.a[ia], b);
  }
}

struct ConvertParams { const void* src; void* dst; i64 count, from, to; };
__device__ __forceinline__ float load_any(const void* p, i64 type, i64 i) {
  if (type == 0) return ((const float*)p)[i];
  const unsigned short bits = ((const unsigned short*)p)[i];
  if (type == 1) return __uint_as_float(((unsigned int)bits) << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
  return f;
}
extern "C" __global__ void cuvil_convert(ConvertParams p) {
  CUVIL_GRID_STRIDE(i, p.count) {
    const float v = load_any(p.src, p.from, i);
    if (p.to == 0) {
      ((float*)p.dst)[i] = v;
    } else {
      unsigned short bits;
      if (p.to == 1) {
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(v));
      } else {
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v));
      }
      ((unsigned short*)p.dst)[i] = bits;
    }
  }
}

struct SoftmaxParams { const float* x; float* y; i64 outer, axis, inner; };
extern "C" __global__ void cuvil_softmax(SoftmaxParams p) {
  __shared__ float shared[32];
  const i64 row = blockIdx.x;
  const i64 o = row / p.inner, in = row % p.inner;
  const float* x = p.x + o * p.axis * p.inner + in;
  float* y = p.y + o * p.axis * p.inner + in;
  float m = CUVIL_NEG_INF;
  for (i64 a = threadIdx.x; a < p.axis; a += blockDim.x) m = fmaxf(m, x[a * p.inner]);
  m = block_max(m, shared);
  float s = 0.f;
  for (i64 a = threadIdx.x; a < p.axis; a += blockDim.x) s += expf(x[a * p.inner] - m);
  s = block_sum(s, shared);
  const float inv = 1.f / s;
  for (i64 a = threadIdx.x; a < p.axis; a += blockDim.x) y[a * p.inner] = expf(x[a * p.inner] - m) * inv;
}

struct RowNormParams {
  const float* x; float* y; const float* gamma; const float* beta;
  i64 rows, dim, kind; double eps;
};
extern "C" __global__ void cuvil_row_norm(RowNormParams p) {
  __shared__ float shared[32];
  const float* x = p.x + (i64)blockIdx.x * p.dim;
  float* y = p.y + (i64)blockIdx.x * p.dim;
  float mean = 0.f;
  if (p.kind == 0) {
    float s = 0.f;
    for (i64 d = threadIdx.x; d < p.dim; d += blockDim.x) s += x[d];
    mean = block_sum(s, shared) / (float)p.dim;
  }
  float q = 0.f;
  for (i64 d = threadIdx.x; d < p.dim; d += blockDim.x) {
    const float c = x[d] - mean;
    q += c * c;
  }
  const float rstd = rsqrtf(block_sum(q, shared) / (float)p.dim + (float)p.eps);
  for (i64 d = threadIdx.x; d < p.dim; d += blockDim.x) {
    float v = (x[d] - mean) * rstd * p.gamma[d];
    if (p.kind == 0) v += p.beta[d];
    y[d] = v;
  }
}

struct GroupNormParams {
  const float* x; float* y; const float* gamma; const float* beta;
  i64 n, c, spatial, groups, nhwc; double eps;
};
__device__ __forceinline__ i64 group_index(const GroupNormParams& p, i64 n, i64 ch, i64 s) {
  return p.nhwc ? (n * p.spatial + s) * p.c + ch : (n * p.c + ch) * p.spatial + s;
}
extern "C" __global__ void cuvil_group_norm(GroupNormParams p) {
  __shared__ float shared[32];
  const i64 n = blockIdx.x / p.groups, g = blockIdx.x % p.groups;
  const i64 cg = p.c / p.groups, count = cg * p.spatial;
  float s = 0.f;
  for (i64 e = threadIdx.x; e < count; e += blockDim.x) {
    s += p.x[group_index(p, n, g * cg + e % cg, e / cg)];
  }
  const float mean = block_sum(s, shared) / (float)count;
  float q = 0.f;
  for (i64 e = threadIdx.x; e < count; e += blockDim.x) {
    const float c = p.x[group_index(p, n, g * cg + e % cg, e / cg)] - mean;
    q += c * c;
  }
  const float rstd = rsqrtf(block_sum(q, shared) / (float)count + (float)p.eps);
  for (i64 e = threadIdx.x; e < count; e += blockDim.x) {
    const i64 ch = g * cg + e % cg;
    const i64 idx = group_index(p, n, ch, e / cg);
    p.y[idx] = (p.x[idx] - mean) * rstd * p.gamma[ch] + p.beta[ch];
  }
}

struct BatchNormParams {
  const float* x; float* y; const float* scale; const float* bias; const float* mean;
  const float* var; i64 total, channels, inner; double eps;
};
extern "C" __global__ void cuvil_batch_norm(BatchNormParams p) {
  CUVIL_GRID_STRIDE(i, p.total) {
    const i64 ch = (i / p.inner) % p.channels;
    const float inv = rsqrtf(p.var[ch] + (float)p.eps);
    p.y[i] = (p.x[i] - p.mean[ch]) * inv * p.scale[ch] + p.bias[ch];
  }
}

struct PoolParams {
  const float* x; float* y;
  i64 n, c, h, w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, nhwc, is_max;
};
extern "C" __global__ void cuvil_pool(PoolParams p) {
  const i64 total = p.n * p.c * p.out_h * p.out_w;
  CUVIL_GRID_STRIDE(i, total) {
    i64 n, ch, oh, ow;
    if (p.nhwc) {
      ch = i % p.c; ow = (i / p.c) % p.out_w; oh = (i / (p.c * p.out_w)) % p.out_h;
      n = i / (p.c * p.out_w * p.out_h);
    } else {
      ow = i % p.out_w; oh = (i / p.out_w) % p.out_h; ch = (i / (p.out_w * p.out_h)) % p.c;
      n = i / (p.out_w * p.out_h * p.c);
    }
    float acc = p.is_max ? CUVIL_NEG_INF : 0.f;
    for (i64 kh = 0; kh < p.kernel_h; ++kh) {
      const i64 ih = oh * p.stride_h - p.pad_h + kh;
      if (ih < 0 || ih >= p.h) continue;
      for (i64 kw = 0; kw < p.kernel_w; ++kw) {
        const i64 iw = ow * p.stride_w - p.pad_w + kw;
        if (iw < 0 || iw >= p.w) continue;
        const float v = p.nhwc ? p.x[((n * p.h + ih) * p.w + iw) * p.c + ch]
                               : p.x[((n * p.c + ch) * p.h + ih) * p.w + iw];
        acc = p.is_max ? fmaxf(acc, v) : acc + v;
      }
    }
    p.y[i] = p.is_max ? acc : acc / (float)(p.kernel_h * p.kernel_w);
  }
}

struct GlobalPoolParams { const float* x; float* y; i64 n, c, spatial, nhwc; };
extern "C" __global__ void cuvil_global_pool(GlobalPoolParams p) {
  CUVIL_GRID_STRIDE(i, p.n * p.c) {
    const i64 n = i / p.c, ch = i % p.c;
    float s = 0.f;
    for (i64 e = 0; e < p.spatial; ++e) {
      s += p.nhwc ? p.x[(n * p.spatial + e) * p.c + ch] : p.x[(n * p.c + ch) * p.spatial + e];
    }
    p.y[i] = s / (float)p.spatial;
  }
}

struct UpsampleParams { const float* x; float* y; i64 n, c, h, w, scale, nhwc; };
extern "C" __global__ void cuvil_upsample(UpsampleParams p) {
  const i64 oh_n = p.h * p.scale, ow_n = p.w * p.scale;
  CUVIL_GRID_STRIDE(i, p.n * p.c * oh_n * ow_n) {
    i64 n, ch, oh, ow;
    if (p.nhwc) {
      ch = i % p.c; ow = (i / p.c) % ow_n; oh = (i / (p.c * ow_n)) % oh_n; n = i / (p.c * ow_n * oh_n);
      p.y[i] = p.x[((n * p.h + oh / p.scale) * p.w + ow / p.scale) * p.c + ch];
    } else {
      ow = i % ow_n; oh = (i / ow_n) % oh_n; ch = (i / (ow_n * oh_n)) % p.c; n = i / (ow_n * oh_n * p.c);
      p.y[i] = p.x[((n * p.c + ch) * p.h + oh / p.scale) * p.w + ow / p.scale];
    }
  }
}

struct StridedCopyParams {
  const float* src; float* dst; i64 outer, copy_inner, src_inner, src_offset, dst_inner, dst_offset;
};
extern "C" __global__ void cuvil_strided_copy(StridedCopyParams p) {
  CUVIL_GRID_STRIDE(i, p.outer * p.copy_inner) {
    const i64 o = i / p.copy_inner, r = i % p.copy_inner;
    p.dst[o * p.dst_inner + p.dst_offset + r] = p.src[o * p.src_inner + p.src_offset + r];
  }
}

struct TransposeParams {
  const float* x; float* y; i64 total, rank; i64 out_dims[CUVIL_MAX_RANK]; i64 in_strides[CUVIL_MAX_RANK];
};
extern "C" __global__ void cuvil_transpose(TransposeParams p) {
  CUVIL_GRID_STRIDE(i, p.total) {
    i64 rest = i, src = 0;
    for (int d = (int)p.rank - 1; d >= 0; --d) {
      src += (rest % p.out_dims[d]) * p.in_strides[d];
      rest /= p.out_dims[d];
    }
    p.y[i] = p.x[src];
  }
}

struct RopeParams { const float* x; float* y; i64 batch, heads, seq, dim, pos_offset; double theta; };
extern "C" __global__ void cuvil_rope(RopeParams p) {
  const i64 half = p.dim / 2;
  CUVIL_GRID_STRIDE(i, p.batch * p.heads * p.seq * half) {
    const i64 d = i % half, row = i / half, s = row % p.seq;
    const double freq = pow(p.theta, -2.0 * (double)d / (double)p.dim);
    const double angle = (double)(p.pos_offset + s) * freq;
    const float c = (float)cos(angle), sn = (float)sin(angle);
    const float* x = p.x + row * p.dim;
    float* y = p.y + row * p.dim;
    const float a = x[d], b = x[d + half];
    y[d] = a * c - b * sn;
    y[d + half] = b * c + a * sn;
  }
}

struct EmbeddingParams { const float* table; const float* ids; float* y; i64 rows, dim, vocab; };
extern "C" __global__ void cuvil_embedding(EmbeddingParams p) {
  CUVIL_GRID_STRIDE(i, p.rows * p.dim) {
    const i64 r = i / p.dim, d = i % p.dim;
    const i64 id = (i64)p.ids[r];
    p.y[i] = (id >= 0 && id < p.vocab) ? p.table[id * p.dim + d] : __int_as_float(0x7fc00000);
  }
}

#define SDPA_WARPS 4
#define SDPA_PER_LANE 8  // head dims up to 256
struct SdpaParams {
  const float* q; const float* k; const float* v; float* o;
  i64 batch, heads_q, heads_kv, seq_q, seq_kv, dim, dim_v, causal; double scale;
};
extern "C" __global__ void cuvil_sdpa(SdpaParams p) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const i64 i = (i64)blockIdx.x * SDPA_WARPS + warp;  // query row
  const i64 h = blockIdx.y, b = blockIdx.z;
  if (i >= p.seq_q) return;  // whole warps exit together: no block barrier follows
  const i64 hkv = h / (p.heads_q / p.heads_kv);
  const float* q = p.q + ((b * p.heads_q + h) * p.seq_q + i) * p.dim;
  const float* k = p.k + (b * p.heads_kv + hkv) * p.seq_kv * p.dim;
  const float* v = p.v + (b * p.heads_kv + hkv) * p.seq_kv * p.dim_v;
  float* o = p.o + ((b * p.heads_q + h) * p.seq_q + i) * p.dim_v;
  float qr[SDPA_PER_LANE], acc[SDPA_PER_LANE];
  for (int t = 0; t < SDPA_PER_LANE; ++t) {
    const i64 d = lane + 32 * t;
    qr[t] = d < p.dim ? q[d] * (float)p.scale : 0.f;
    acc[t] = 0.f;
  }
  i64 last = p.seq_kv - 1;
  if (p.causal) last = min(last, i + (p.seq_kv - p.seq_q));
  float m = CUVIL_NEG_INF, l = 0.f;
  for (i64 j = 0; j <= last; ++j) {
    float s = 0.f;
    for (int t = 0; t < SDPA_PER_LANE; ++t) {
      const i64 d = lane + 32 * t;
      if (d < p.dim) s += qr[t] * k[j * p.dim + d];
    }
    s = warp_sum(s);
    const float m_new = fmaxf(m, s);
    const float correction = expf(m - m_new);  // exp(-inf) = 0 on the first key
    const float w = expf(s - m_new);
    l = l * correction + w;
    for (int t = 0; t < SDPA_PER_LANE; ++t) {
      const i64 d = lane + 32 * t;
      acc[t] = acc[t] * correction + (d < p.dim_v ? w * v[j * p.dim_v + d] : 0.f);
    }
    m = m_new;
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;  // a query that sees no key (Sq > Skv causal) -> 0
  for (int t = 0; t < SDPA_PER_LANE; ++t) {
    const i64 d = lane + 32 * t;
    if (d < p.dim_v) o[d] = acc[t] * inv;
  }
}
)CUDA";

}  // namespace

const std::string& source() {
  static const std::string text = kSource;
  return text;
}

}  // namespace cuvil::runtime::cuda::simple
