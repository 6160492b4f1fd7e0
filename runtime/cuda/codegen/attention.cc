#include "runtime/cuda/codegen/attention.h"

#include <cmath>
#include <string>

#include "base/error.h"
#include "runtime/cuda/codegen/attention_tc.h"

namespace cuvil::runtime::cuda::codegen {

namespace {

int rows_per_warp(const AttentionTiles& t) {
  return t.block_q / t.warps;
}
int64_t value_lanes(const AttentionProblem& p) {
  return (p.head_dim_v + 31) / 32;
}

int shared_bytes(const AttentionProblem& p, const AttentionTiles& t) {
  if (t.tensor_cores) return detail::attention_tc_shared_bytes(p, t);
  const int64_t floats = t.block_kv * (p.head_dim + 1) + t.block_kv * p.head_dim_v +
                         t.block_q * p.head_dim + t.block_q * t.block_kv;
  return static_cast<int>(floats * 4);
}

// Thread mapping: block (x, y, z) = (query tile, query head, batch). Warp w owns query rows
// w*R .. w*R+R-1 of the tile (R = block_q / warps) and keeps their running max m, sum l and output
// accumulators in registers (lane owns output columns lane, lane+32, ...). Per K/V tile (block_kv
// keys, staged in shared memory as fp32 by all threads): lane owns keys lane, lane+32, ... of the
// tile for the scores of all R rows, the warp reduces each row's max and sum with shuffles (online
// softmax), writes the probabilities to the rows' shared-memory slots, then accumulates P x V.
constexpr const char* kKernel = R"CUDA(
struct Params {
  const void* q; const void* k; const void* v; void* o;
  i64 batch, hq, hkv, sq, skv;
  i64 qs[3], ks[3], vs[3], os[3];
  double scale;
};
constexpr int D = {{D}}, DV = {{DV}}, BQ = {{BQ}}, BKV = {{BKV}}, WARPS = {{WARPS}};
constexpr bool CAUSAL = {{CAUSAL}};
constexpr int R = BQ / WARPS, DVL = (DV + 31) / 32, KL = BKV / 32, KLD = D + 1;

extern "C" __global__ void __launch_bounds__(WARPS * 32) {{NAME}}(const Params p) {
  extern __shared__ float smem[];
  float* Ks = smem;              // [BKV][D + 1]: +1 so lanes reading different keys miss banks
  float* Vs = Ks + BKV * KLD;    // [BKV][DV]
  float* Qs = Vs + BKV * DV;     // [BQ][D], pre-multiplied by scale * log2(e) (exp2 softmax)
  float* Ps = Qs + BQ * D;       // [BQ][BKV] probabilities, one row per query row
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const i64 b = blockIdx.z, h = blockIdx.y, q0 = (i64)blockIdx.x * BQ;
  const i64 hk = h / (p.hq / p.hkv);  // grouped-query: kv head of query head h
  const i64 q_base = b * p.qs[0] + h * p.qs[1], o_base = b * p.os[0] + h * p.os[1];
  const i64 k_base = b * p.ks[0] + hk * p.ks[1], v_base = b * p.vs[0] + hk * p.vs[1];
  const float q_scale = (float)p.scale * 1.4426950408889634f;

  for (int idx = tid; idx < BQ * D; idx += WARPS * 32) {
    const i64 qi = q0 + idx / D;
    Qs[idx] = qi < p.sq ? {{LOAD_Q}} * q_scale : 0.f;
  }
  float m[R], l[R], acc[R][DVL];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int c = 0; c < DVL; ++c) acc[r][c] = 0.f;
  }
  // Causal, queries aligned to the end: query i sees key j iff j <= i + (skv - sq).
  const i64 offset = p.skv - p.sq;
  i64 kv_end = p.skv;
  if (CAUSAL) kv_end = min(p.skv, q0 + BQ + offset);
  for (i64 kv0 = 0; kv0 < kv_end; kv0 += BKV) {
    __syncthreads();  // the previous tile (and, the first time, nothing) is consumed
    for (int idx = tid; idx < BKV * D; idx += WARPS * 32) {
      const int j = idx / D, d = idx % D;
      const i64 kj = kv0 + j;
      Ks[j * KLD + d] = kj < p.skv ? {{LOAD_K}} : 0.f;
    }
    for (int idx = tid; idx < BKV * DV; idx += WARPS * 32) {
      const int j = idx / DV, d = idx % DV;
      const i64 kj = kv0 + j;
      Vs[idx] = kj < p.skv ? {{LOAD_V}} : 0.f;
    }
    __syncthreads();
    // Scores: lane owns keys lane, lane+32, ... of the tile; each K element it reads serves all R
    // rows of the warp (the Q reads are shared-memory broadcasts).
    float s[R][KL];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int jj = 0; jj < KL; ++jj) s[r][jj] = 0.f;
#pragma unroll
    for (int jj = 0; jj < KL; ++jj) {
      const float* k_row = Ks + (jj * 32 + lane) * KLD;
#pragma unroll 4
      for (int d = 0; d < D; ++d) {
        const float kd = k_row[d];
#pragma unroll
        for (int r = 0; r < R; ++r) s[r][jj] += Qs[(warp * R + r) * D + d] * kd;
      }
    }
    // Online softmax, row by row: new running max, rescale of the old sum and accumulators.
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const i64 qi = q0 + warp * R + r;
      float tile_max = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < KL; ++jj) {
        const i64 kj = kv0 + jj * 32 + lane;
        const bool visible = kj < p.skv && (!CAUSAL || kj <= qi + offset);
        if (!visible) s[r][jj] = -INFINITY;
        tile_max = fmaxf(tile_max, s[r][jj]);
      }
      tile_max = cuvil_warp_max(tile_max);
      const float m_new = fmaxf(m[r], tile_max);
      const bool none = m_new == -INFINITY;  // nothing visible yet: keep the (empty) state
      const float alpha = none ? 1.f : exp2f(m[r] - m_new);  // 0 when m[r] was -inf
      float p_sum = 0.f;
#pragma unroll
      for (int jj = 0; jj < KL; ++jj) {
        const float pj = none ? 0.f : exp2f(s[r][jj] - m_new);
        Ps[(warp * R + r) * BKV + jj * 32 + lane] = pj;
        p_sum += pj;
      }
      l[r] = l[r] * alpha + cuvil_warp_sum(p_sum);
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < DVL; ++c) acc[r][c] *= alpha;
    }
    __syncwarp();
    // P x V: lane owns output columns lane, lane+32, ...; each V element serves all R rows.
#pragma unroll 2
    for (int j = 0; j < BKV; ++j) {
      float vv[DVL];
#pragma unroll
      for (int c = 0; c < DVL; ++c) {
        const int dv = c * 32 + lane;
        vv[c] = dv < DV ? Vs[j * DV + dv] : 0.f;
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float pj = Ps[(warp * R + r) * BKV + j];
#pragma unroll
        for (int c = 0; c < DVL; ++c) acc[r][c] += pj * vv[c];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const i64 qi = q0 + warp * R + r;
    if (qi >= p.sq) continue;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;  // a row that sees no key outputs 0
#pragma unroll
    for (int c = 0; c < DVL; ++c) {
      const int dv = c * 32 + lane;
      if (dv < DV) {
        const float value = acc[r][c] * inv;
        {{STORE_O}}
      }
    }
  }
}
)CUDA";

}  // namespace

void validate_attention(const AttentionProblem& p, const AttentionTiles& t) {
  require(p.batch > 0 && p.heads_q > 0 && p.heads_kv > 0 && p.seq_q > 0 && p.seq_kv > 0,
          "attention: batch, heads and sequence lengths must be positive");
  require(p.heads_q % p.heads_kv == 0, "attention: heads_q (" + std::to_string(p.heads_q) +
                                           ") must be a multiple of heads_kv (" +
                                           std::to_string(p.heads_kv) + ")");
  require(p.head_dim >= 1 && p.head_dim <= 256,
          "attention: head_dim must be in [1, 256], got " + std::to_string(p.head_dim));
  require(p.head_dim_v >= 1 && p.head_dim_v <= 256,
          "attention: head_dim_v must be in [1, 256], got " + std::to_string(p.head_dim_v));
  require(t.warps >= 1 && t.warps <= 32,
          "attention tiles: warps must be in [1, 32], got " + std::to_string(t.warps));
  require(p.heads_q <= 65535 && p.batch <= 65535, "attention: heads_q and batch must be <= 65535");
  if (t.tensor_cores) {
    detail::validate_attention_tc(p, t);
    require(shared_bytes(p, t) <= kMaxSharedBytesSm90,
            "attention tiles: block_q and block_kv need " + std::to_string(shared_bytes(p, t)) +
                " bytes of shared memory, at most " + std::to_string(kMaxSharedBytesSm90));
    return;
  }
  require(t.block_q > 0 && t.block_q % t.warps == 0,
          "attention tiles: block_q (" + std::to_string(t.block_q) +
              ") must be a positive multiple of warps (" + std::to_string(t.warps) + ")");
  require(t.block_kv > 0 && t.block_kv % 32 == 0 && t.block_kv <= 256,
          "attention tiles: block_kv must be a multiple of 32 in [32, 256], got " +
              std::to_string(t.block_kv));
  const int64_t registers = rows_per_warp(t) * (value_lanes(p) + t.block_kv / 32);
  require(registers <= 128,
          "attention tiles: block_q / warps x (ceil(head_dim_v / 32) + "
          "block_kv / 32) = " +
              std::to_string(registers) + " score and output accumulators per thread, at most 128");
  require(shared_bytes(p, t) <= kMaxSharedBytesSm90,
          "attention tiles: block_q and block_kv need " + std::to_string(shared_bytes(p, t)) +
              " bytes of shared memory, at most " + std::to_string(kMaxSharedBytesSm90));
}

KernelSource attention_source(const AttentionProblem& p, const AttentionTiles& t) {
  validate_attention(p, t);
  const std::string name = "cuvil_attention_" + std::string(to_string(p.type)) + "_d" +
                           std::to_string(p.head_dim) + "_dv" + std::to_string(p.head_dim_v) +
                           "_q" + std::to_string(t.block_q) + "_kv" + std::to_string(t.block_kv) +
                           "_w" + std::to_string(t.warps) + (p.causal ? "_causal" : "") +
                           (t.tensor_cores ? "_tc" : "");
  if (t.tensor_cores) {
    return KernelSource{name,
                        std::string(device_prelude()) + detail::attention_tc_body(p, t, name),
                        {"--std=c++17"}};
  }
  std::string body = kKernel;
  replace_all(body, "{{D}}", std::to_string(p.head_dim));
  replace_all(body, "{{DV}}", std::to_string(p.head_dim_v));
  replace_all(body, "{{BQ}}", std::to_string(t.block_q));
  replace_all(body, "{{BKV}}", std::to_string(t.block_kv));
  replace_all(body, "{{WARPS}}", std::to_string(t.warps));
  replace_all(body, "{{CAUSAL}}", p.causal ? "true" : "false");
  replace_all(body, "{{NAME}}", name);
  replace_all(body, "{{LOAD_Q}}", load_expr(p.type, "p.q", "q_base + qi * p.qs[2] + idx % D"));
  replace_all(body, "{{LOAD_K}}", load_expr(p.type, "p.k", "k_base + kj * p.ks[2] + d"));
  replace_all(body, "{{LOAD_V}}", load_expr(p.type, "p.v", "v_base + kj * p.vs[2] + d"));
  replace_all(body, "{{STORE_O}}",
              store_stmt(p.type, "p.o", "o_base + qi * p.os[2] + dv", "value"));
  return KernelSource{name, std::string(device_prelude()) + body, {"--std=c++17"}};
}

LaunchGeometry attention_geometry(const AttentionProblem& p, const AttentionTiles& t) {
  validate_attention(p, t);
  LaunchGeometry g;
  g.grid[0] = static_cast<unsigned>((p.seq_q + t.block_q - 1) / t.block_q);
  g.grid[1] = static_cast<unsigned>(p.heads_q);
  g.grid[2] = static_cast<unsigned>(p.batch);
  g.block[0] = static_cast<unsigned>(t.warps * 32);
  g.shared_bytes = static_cast<unsigned>(shared_bytes(p, t));
  return g;
}

AttentionKernelParams attention_dense_params(const AttentionProblem& p, const void* q,
                                             const void* k, const void* v, void* o) {
  AttentionKernelParams params;
  params.q = q;
  params.k = k;
  params.v = v;
  params.o = o;
  params.batch = p.batch;
  params.heads_q = p.heads_q;
  params.heads_kv = p.heads_kv;
  params.seq_q = p.seq_q;
  params.seq_kv = p.seq_kv;
  auto bhsd = [](int64_t* stride, int64_t heads, int64_t seq, int64_t dim) {
    stride[2] = dim;
    stride[1] = seq * dim;
    stride[0] = heads * seq * dim;
  };
  bhsd(params.q_stride, p.heads_q, p.seq_q, p.head_dim);
  bhsd(params.k_stride, p.heads_kv, p.seq_kv, p.head_dim);
  bhsd(params.v_stride, p.heads_kv, p.seq_kv, p.head_dim_v);
  bhsd(params.o_stride, p.heads_q, p.seq_q, p.head_dim_v);
  params.scale = p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.head_dim));
  return params;
}

}  // namespace cuvil::runtime::cuda::codegen
