#include "runtime/cuda/codegen/attention_tc.h"

#include <string>

#include "base/error.h"

namespace cuvil::runtime::cuda::codegen::detail {

namespace {

// Thread mapping (FlashAttention-2 style): block (x, y, z) = (query tile, query head, batch);
// warp w owns query rows w*16 .. w*16+15 of the tile (block_q = 16 * warps). Its Q rows live in
// registers as mma A fragments for the whole kernel. Per K/V tile (block_kv keys, staged in shared
// memory as 16-bit by all threads):
//  - S = Q K^T with mma m16n8k16: lane l (g = l/4, t = l%4) holds scores of rows g and g+8,
//    keys 2t, 2t+1 of every 8-key column tile (the m16n8 C fragment);
//  - online softmax per row: max and sum over the row's 4-lane quad with shuffles;
//  - the probabilities, rounded to 16 bits, ARE the A fragments of P x V (the C layout of two
//    adjacent 8-key tiles equals the A layout of one 16-key step), V fragments via ldmatrix.trans;
//  - O (rows g, g+8; columns 2t, 2t+1 of every 8-column tile) is rescaled and accumulated in fp32.
constexpr const char* kKernel = R"CUDA(
struct Params {
  const void* q; const void* k; const void* v; void* o;
  i64 batch, hq, hkv, sq, skv;
  i64 qs[3], ks[3], vs[3], os[3];
  double scale;
};
constexpr int D = {{D}}, DV = {{DV}}, BKV = {{BKV}}, WARPS = {{WARPS}}, BQ = 16 * WARPS;
constexpr bool CAUSAL = {{CAUSAL}};
constexpr int QLD = D + 8, KLD = D + 8, VLD = DV + 8;  // +8: conflict-free ldmatrix rows
constexpr int DK = D / 16, NS = BKV / 8, NO = DV / 8;
typedef unsigned short T16;

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void ldsm_x4(unsigned* r, const T16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned* r, const T16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void mma16816(float* d, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.{{MMA_TYPE}}.{{MMA_TYPE}}.f32 {%0,%1,%2,%3}, "
      "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats -> one register of two 16-bit values, the lower k index in the low half.
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  return (unsigned){{TO16}}(lo) | ((unsigned){{TO16}}(hi) << 16);
}

extern "C" __global__ void __launch_bounds__(WARPS * 32) {{NAME}}(const Params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T16* Qs = (T16*)smem_raw;  // [BQ][QLD]
  T16* Ks = Qs + BQ * QLD;   // [BKV][KLD]
  T16* Vs = Ks + BKV * KLD;  // [BKV][VLD]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const i64 b = blockIdx.z, h = blockIdx.y, q0 = (i64)blockIdx.x * BQ;
  const i64 hk = h / (p.hq / p.hkv);  // grouped-query: kv head of query head h
  const T16* q = (const T16*)p.q + b * p.qs[0] + h * p.qs[1];
  const T16* k = (const T16*)p.k + b * p.ks[0] + hk * p.ks[1];
  const T16* v = (const T16*)p.v + b * p.vs[0] + hk * p.vs[1];
  const float scale_log2 = (float)p.scale * 1.4426950408889634f;  // exp2-domain softmax

  for (int idx = tid; idx < BQ * D; idx += WARPS * 32) {
    const int r = idx / D, d = idx % D;
    Qs[r * QLD + d] = q0 + r < p.sq ? q[(q0 + r) * p.qs[2] + d] : (T16)0;
  }
  __syncthreads();
  unsigned qf[DK][4];
#pragma unroll
  for (int kk = 0; kk < DK; ++kk)
    ldsm_x4(qf[kk], Qs + (warp * 16 + (lane & 15)) * QLD + kk * 16 + (lane >> 4) * 8);

  float o[NO][4];
#pragma unroll
  for (int c = 0; c < NO; ++c) o[c][0] = o[c][1] = o[c][2] = o[c][3] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
  const i64 row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  // Causal, queries aligned to the end: query i sees key j iff j <= i + (skv - sq).
  const i64 offset = p.skv - p.sq;
  i64 kv_end = p.skv;
  if (CAUSAL) kv_end = min(p.skv, q0 + BQ + offset);

  for (i64 kv0 = 0; kv0 < kv_end; kv0 += BKV) {
    __syncthreads();  // everyone is done with the previous K/V tile
    for (int idx = tid; idx < BKV * D; idx += WARPS * 32) {
      const int j = idx / D, d = idx % D;
      Ks[j * KLD + d] = kv0 + j < p.skv ? k[(kv0 + j) * p.ks[2] + d] : (T16)0;
    }
    for (int idx = tid; idx < BKV * DV; idx += WARPS * 32) {
      const int j = idx / DV, d = idx % DV;
      Vs[j * VLD + d] = kv0 + j < p.skv ? v[(kv0 + j) * p.vs[2] + d] : (T16)0;
    }
    __syncthreads();

    float s[NS][4];
#pragma unroll
    for (int j = 0; j < NS; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < DK; ++kk)
#pragma unroll
      for (int j = 0; j < NS; j += 2) {
        unsigned r[4];
        ldsm_x4(r, Ks + (j * 8 + (lane & 7) + (lane >> 4) * 8) * KLD + kk * 16 +
                       ((lane >> 3) & 1) * 8);
        mma16816(s[j], qf[kk], r[0], r[1]);
        mma16816(s[j + 1], qf[kk], r[2], r[3]);
      }

    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < NS; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const i64 key = kv0 + j * 8 + 2 * t + (e & 1);
        const i64 qi = row[e >> 1];
        const bool visible = key < p.skv && (!CAUSAL || key <= qi + offset);
        s[j][e] = visible ? s[j][e] * scale_log2 : -INFINITY;
        tile_max[e >> 1] = fmaxf(tile_max[e >> 1], s[j][e]);
      }
    float alpha[2], m_new[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      m_new[r] = fmaxf(m_run[r], tile_max[r]);
      // Nothing visible yet: keep the empty state (and avoid -inf - -inf).
      alpha[r] = m_new[r] == -INFINITY ? 1.f : exp2f(m_run[r] - m_new[r]);
    }
    float row_sum[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < NS; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float mr = m_new[e >> 1];
        s[j][e] = mr == -INFINITY ? 0.f : exp2f(s[j][e] - mr);
        row_sum[e >> 1] += s[j][e];
      }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
      row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
      l_run[r] = l_run[r] * alpha[r] + row_sum[r];
      m_run[r] = m_new[r];
    }
#pragma unroll
    for (int c = 0; c < NO; ++c) {
      o[c][0] *= alpha[0];
      o[c][1] *= alpha[0];
      o[c][2] *= alpha[1];
      o[c][3] *= alpha[1];
    }
#pragma unroll
    for (int kk = 0; kk < BKV / 16; ++kk) {
      unsigned pa[4];
      pa[0] = pack2(s[2 * kk][0], s[2 * kk][1]);
      pa[1] = pack2(s[2 * kk][2], s[2 * kk][3]);
      pa[2] = pack2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa[3] = pack2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int c = 0; c < NO; c += 2) {
        unsigned r[4];
        ldsm_x4_trans(r, Vs + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * VLD + c * 8 +
                             (lane >> 4) * 8);
        mma16816(o[c], pa, r[0], r[1]);
        mma16816(o[c + 1], pa, r[2], r[3]);
      }
    }
  }

  T16* out = (T16*)p.o + b * p.os[0] + h * p.os[1];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (row[r] >= p.sq) continue;
    const float inv = l_run[r] > 0.f ? 1.f / l_run[r] : 0.f;  // a row that sees no key outputs 0
#pragma unroll
    for (int c = 0; c < NO; ++c) {
      const int col = c * 8 + 2 * t;
      out[row[r] * p.os[2] + col] = {{TO16}}(o[c][2 * r] * inv);
      out[row[r] * p.os[2] + col + 1] = {{TO16}}(o[c][2 * r + 1] * inv);
    }
  }
}
)CUDA";

}  // namespace

void validate_attention_tc(const AttentionProblem& p, const AttentionTiles& t) {
  require(p.type != ElemType::f32,
          "attention tiles: tensor_cores needs bf16 or f16 q/k/v, got f32");
  require(p.head_dim % 16 == 0 && p.head_dim_v % 16 == 0,
          "attention tiles: tensor_cores needs head_dim and head_dim_v multiples of 16, got " +
              std::to_string(p.head_dim) + " and " + std::to_string(p.head_dim_v));
  require(t.block_q == 16 * t.warps, "attention tiles: tensor_cores needs block_q = 16 x warps (" +
                                         std::to_string(16 * t.warps) + "), got " +
                                         std::to_string(t.block_q));
  require(t.block_kv % 16 == 0, "attention tiles: tensor_cores needs block_kv a multiple of 16");
  const int64_t registers = p.head_dim / 4 + t.block_kv / 2 + p.head_dim_v / 2;
  require(registers <= 192, "attention tiles: tensor_cores with head_dim " +
                                std::to_string(p.head_dim) + " and block_kv " +
                                std::to_string(t.block_kv) + " needs " + std::to_string(registers) +
                                " fragment registers per thread, at most 192");
}

int attention_tc_shared_bytes(const AttentionProblem& p, const AttentionTiles& t) {
  return static_cast<int>((t.block_q * (p.head_dim + 8) + t.block_kv * (p.head_dim + 8) +
                           t.block_kv * (p.head_dim_v + 8)) *
                          2);
}

std::string attention_tc_body(const AttentionProblem& p, const AttentionTiles& t,
                              const std::string& name) {
  std::string body = kKernel;
  replace_all(body, "{{D}}", std::to_string(p.head_dim));
  replace_all(body, "{{DV}}", std::to_string(p.head_dim_v));
  replace_all(body, "{{BKV}}", std::to_string(t.block_kv));
  replace_all(body, "{{WARPS}}", std::to_string(t.warps));
  replace_all(body, "{{CAUSAL}}", p.causal ? "true" : "false");
  replace_all(body, "{{MMA_TYPE}}", p.type == ElemType::f16 ? "f16" : "bf16");
  replace_all(body, "{{TO16}}", p.type == ElemType::f16 ? "cuvil_f32_to_f16" : "cuvil_f32_to_bf16");
  replace_all(body, "{{NAME}}", name);
  return body;
}

}  // namespace cuvil::runtime::cuda::codegen::detail
