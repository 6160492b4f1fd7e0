#include "runtime/cuda/codegen/gemm_body.h"

#include <string>

#include "base/error.h"

namespace cuvil::runtime::cuda::codegen::detail {

namespace {

// Thread mapping (documented once, here):
//  - Block (blockIdx.x, blockIdx.y, blockIdx.z) computes the BM x BN tile of C at rows
//    blockIdx.y*BM, columns blockIdx.x*BN of GEMM number blockIdx.z (batch, or conv group).
//  - Its WARPS_M x WARPS_N warps each own a WM x WN sub-tile: warp w at rows (w / WARPS_N)*WM,
//    columns (w % WARPS_N)*WN. A warp covers its sub-tile with MI x NI mma tiles of 16 x 8.
//  - Inside an mma tile, lane l (g = l/4, t = l%4) holds accumulators (g, 2t), (g, 2t+1),
//    (g+8, 2t), (g+8, 2t+1) (PTX ISA's m16n8 C fragment). The epilogue stages them in shared
//    memory; then thread i of the block stores tile elements i, i + THREADS, ... (row-major).
//  - All threads of the block cooperatively copy the A (BM x BK) and B (BK x BN) tiles of each
//    k step into shared memory, vector by vector, STAGES-1 tiles ahead of the compute (cp.async
//    groups); out-of-range vectors are zero-filled, so any M, N, K works.
//  - split_k > 1: blockIdx.z = gemm * SPLIT_K + split; each split sums its own range of k tiles
//    and atomically adds its partial tile into the (zeroed, f32) C.
constexpr const char* kBody = R"CUDA(
constexpr int BM = {{BM}}, BN = {{BN}}, BK = {{BK}}, WM = {{WM}}, WN = {{WN}}, STAGES = {{STAGES}};
constexpr int VA = {{VA}}, VB = {{VB}};
constexpr int SPLIT_K = {{SPLIT_K}};  // blocks per output tile along K (atomicAdd into C)
constexpr bool HALF = {{HALF}};   // 16-bit inputs (mma m16n8k16) else fp32 via tf32 (m16n8k8)
constexpr bool SPLIT = {{SPLIT}};  // f32 inputs: 3xTF32 (big*big + big*small + small*big)
constexpr bool B_NK = {{B_NK}};   // B tile stored [BN][BK] (k contiguous) else [BK][BN]
typedef {{TIN}} TIn;
constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN, THREADS = WARPS_M * WARPS_N * 32;
constexpr int MMA_K = HALF ? 16 : 8;
constexpr int MI = WM / 16, NI = WN / 8;
// Row paddings keep ldmatrix / fragment reads free of shared-memory bank conflicts.
constexpr int A_LD = BK + (HALF ? 8 : 4);
constexpr int B_LD = B_NK ? A_LD : BN + 8;
constexpr int A_STAGE = BM * A_LD;
constexpr int B_STAGE = B_NK ? BN * B_LD : BK * B_LD;
constexpr int C_LD = BN + 4;  // the epilogue's fp32 staging tile, aliasing the pipeline buffers

__device__ __forceinline__ unsigned cuvil_smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// Copies `V` elements global -> shared (zero-filling when !valid). Asynchronous (cp.async) when
// the vector is at least 4 bytes, else a plain load and store.
template <int V>
__device__ __forceinline__ void cuvil_copy(TIn* dst, const TIn* src, bool valid) {
  constexpr int BYTES = V * (int)sizeof(TIn);
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(cuvil_smem_addr(dst)),
                 "l"(src), "r"(valid ? 16 : 0));
  } else if constexpr (BYTES >= 4) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(cuvil_smem_addr(dst)),
                 "l"(src), "n"(BYTES), "r"(valid ? BYTES : 0));
  } else {
    *dst = valid ? *src : (TIn)0;
  }
}
__device__ __forceinline__ void cuvil_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cuvil_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ unsigned cuvil_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void cuvil_mma(float* d, const unsigned* a, const unsigned* b) {
  if constexpr (HALF) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.{{MMA_TYPE}}.{{MMA_TYPE}}.f32 {%0,%1,%2,%3}, "
        "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

__device__ __forceinline__ void cuvil_ldmatrix_x4(unsigned* r, const TIn* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(cuvil_smem_addr(p)));
}
__device__ __forceinline__ void cuvil_ldmatrix_x4_trans(unsigned* r, const TIn* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(cuvil_smem_addr(p)));
}

// Where A element (row, kcol) of GEMM z lives; false = outside the problem (reads as zero).
__device__ __forceinline__ bool a_src(const Params& p, i64 z, i64 M, i64 K, i64 row, i64 kcol,
                                      const TIn** src) {
{{A_ADDRESS}}
}

extern "C" __global__ void __launch_bounds__(THREADS) {{NAME}}(const Params p) {
  extern __shared__ __align__(16) unsigned char cuvil_smem[];
  TIn* As = (TIn*)cuvil_smem;
  TIn* Bs = As + STAGES * A_STAGE;
  const i64 z = blockIdx.z / SPLIT_K;        // GEMM (batch entry or conv group)
  const int split = blockIdx.z % SPLIT_K;    // which slice of K this block sums (split-K)
  i64 M, N, K, ldb;
  const TIn* B;
{{SETUP}}
  const i64 m0 = (i64)blockIdx.y * BM, n0 = (i64)blockIdx.x * BN;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const i64 k_tiles_all = (K + BK - 1) / BK;
  const i64 per_split = (k_tiles_all + SPLIT_K - 1) / SPLIT_K;
  const i64 kt_begin = split * per_split;
  const i64 k_tiles = max(min(k_tiles_all, kt_begin + per_split) - kt_begin, (i64)0);

  // Copy k tile `kt` into pipeline stage `stage`.
  auto load_tile = [&](i64 kt, int stage) {
    const i64 k0 = kt * BK;
    TIn* as = As + stage * A_STAGE;
    constexpr int A_VECS = BM * BK / VA;
    for (int v = tid; v < A_VECS; v += THREADS) {
      const int row = v / (BK / VA), col = (v % (BK / VA)) * VA;
      const TIn* src = B;  // any valid address when zero-filling
      const bool valid = a_src(p, z, M, K, m0 + row, k0 + col, &src);
      cuvil_copy<VA>(as + row * A_LD + col, valid ? src : B, valid);
    }
    TIn* bs = Bs + stage * B_STAGE;
    if constexpr (B_NK) {
      constexpr int B_VECS = BN * BK / VB;
      for (int v = tid; v < B_VECS; v += THREADS) {
        const int row = v / (BK / VB), col = (v % (BK / VB)) * VB;
        const i64 gn = n0 + row, gk = k0 + col;
        const bool valid = gn < N && gk < K;
        cuvil_copy<VB>(bs + row * B_LD + col, valid ? B + gn * ldb + gk : B, valid);
      }
    } else {
      constexpr int B_VECS = BK * BN / VB;
      for (int v = tid; v < B_VECS; v += THREADS) {
        const int row = v / (BN / VB), col = (v % (BN / VB)) * VB;
        const i64 gk = k0 + row, gn = n0 + col;
        const bool valid = gn < N && gk < K;
        cuvil_copy<VB>(bs + row * B_LD + col, valid ? B + gk * ldb + gn : B, valid);
      }
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  // Prologue: STAGES-1 tiles in flight. Every iteration commits exactly one group (possibly
  // empty) so wait_group<STAGES-2> always means "tile kt has landed".
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_tile(kt_begin + s, s);
    cuvil_cp_async_commit();
  }

  const int g = lane >> 2, t = lane & 3;
  for (i64 kt = 0; kt < k_tiles; ++kt) {
    cuvil_cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt visible to all; everyone is done reading stage (kt-1) % STAGES
    const i64 next = kt + STAGES - 1;
    if (next < k_tiles) load_tile(kt_begin + next, (int)(next % STAGES));
    cuvil_cp_async_commit();

    const TIn* as = As + (int)(kt % STAGES) * A_STAGE;
    const TIn* bs = Bs + (int)(kt % STAGES) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += MMA_K) {
      unsigned af[MI][4], bf[NI][2];
      unsigned afs[MI][4], bfs[NI][2];  // 3xTF32 remainders (unused otherwise)
      if constexpr (HALF) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
          cuvil_ldmatrix_x4(af[i], as + (wm0 + i * 16 + (lane & 15)) * A_LD + kk + (lane >> 4) * 8);
#pragma unroll
        for (int j = 0; j < NI; j += 2) {
          unsigned r[4];
          if constexpr (B_NK) {
            cuvil_ldmatrix_x4(r, bs + (wn0 + j * 8 + (lane & 7) + (lane >> 4) * 8) * B_LD + kk +
                                     ((lane >> 3) & 1) * 8);
          } else {
            cuvil_ldmatrix_x4_trans(r, bs + (kk + (lane & 7) + ((lane >> 3) & 1) * 8) * B_LD +
                                           wn0 + j * 8 + (lane >> 4) * 8);
          }
          bf[j][0] = r[0];
          bf[j][1] = r[1];
          bf[j + 1][0] = r[2];
          bf[j + 1][1] = r[3];
        }
      } else {
        float ar[MI][4], br[NI][2];
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          const float* a = (const float*)as + (wm0 + i * 16 + g) * A_LD + kk + t;
          ar[i][0] = a[0];
          ar[i][1] = a[8 * A_LD];
          ar[i][2] = a[4];
          ar[i][3] = a[8 * A_LD + 4];
        }
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          const float* b = (const float*)bs;
          const int n = wn0 + j * 8 + g;
          if constexpr (B_NK) {
            br[j][0] = b[n * B_LD + kk + t];
            br[j][1] = b[n * B_LD + kk + t + 4];
          } else {
            br[j][0] = b[(kk + t) * B_LD + n];
            br[j][1] = b[(kk + t + 4) * B_LD + n];
          }
        }
        // tf32 = the high part; with SPLIT also the rounding remainder (3xTF32: fp32-level error).
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            af[i][e] = cuvil_tf32(ar[i][e]);
            if constexpr (SPLIT) afs[i][e] = cuvil_tf32(ar[i][e] - __uint_as_float(af[i][e]));
          }
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            bf[j][e] = cuvil_tf32(br[j][e]);
            if constexpr (SPLIT) bfs[j][e] = cuvil_tf32(br[j][e] - __uint_as_float(bf[j][e]));
          }
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          if constexpr (SPLIT) {  // small products first: they are the least significant
            cuvil_mma(acc[i][j], afs[i], bf[j]);
            cuvil_mma(acc[i][j], af[i], bfs[j]);
          }
          cuvil_mma(acc[i][j], af[i], bf[j]);
        }
    }
  }
  cuvil_cp_async_wait<0>();
  __syncthreads();  // all warps are done with the pipeline buffers: reuse them for C

  // Epilogue: accumulator fragments -> shared memory (fp32 BM x BN tile), then the whole block
  // walks the tile row by row so that consecutive threads store consecutive columns (coalesced),
  // applying bias and the fused steps on the way. Keeps the unrolled code small.
  float* Cs = (float*)cuvil_smem;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        Cs[(wm0 + i * 16 + g + (e >> 1) * 8) * C_LD + wn0 + j * 8 + t * 2 + (e & 1)] = acc[i][j][e];
  __syncthreads();
  for (int idx = tid; idx < BM * BN; idx += THREADS) {
    const i64 row = m0 + idx / BN, col = n0 + idx % BN;
    if (row < M && col < N) {
      float v = Cs[(idx / BN) * C_LD + idx % BN];
{{STORE}}
    }
  }
}
)CUDA";

int mma_k(ElemType in) {
  return in == ElemType::f32 ? 8 : 16;
}

}  // namespace

int legal_vector_width(int requested, ElemType in, const std::vector<int64_t>& divides) {
  int width = 1;
  while (width * 2 <= requested && width * 2 * elem_bytes(in) <= 16) width *= 2;
  for (int64_t d : divides) {
    while (width > 1 && d % width != 0) width /= 2;
  }
  return width;
}

int gemm_body_shared_bytes(ElemType in, bool b_transposed, const GemmTiles& t) {
  const int pad = in == ElemType::f32 ? 4 : 8;
  const int a_stage = t.block_m * (t.block_k + pad);
  const int b_stage = b_transposed ? t.block_n * (t.block_k + pad) : t.block_k * (t.block_n + 8);
  const int pipeline = t.stages * (a_stage + b_stage) * elem_bytes(in);
  const int epilogue = t.block_m * (t.block_n + 4) * 4;
  return pipeline > epilogue ? pipeline : epilogue;
}

void validate_gemm_tiles(ElemType in, bool b_transposed, const GemmTiles& t) {
  auto positive = [](int v, const char* name) {
    require(v > 0,
            std::string("gemm tiles: ") + name + " must be positive, got " + std::to_string(v));
  };
  positive(t.block_m, "block_m");
  positive(t.block_n, "block_n");
  positive(t.block_k, "block_k");
  positive(t.warp_m, "warp_m");
  positive(t.warp_n, "warp_n");
  positive(t.vector_width, "vector_width");
  require(t.warp_m % 16 == 0, "gemm tiles: warp_m must be a multiple of 16 (the mma tile), got " +
                                  std::to_string(t.warp_m));
  require(t.warp_n % 16 == 0,
          "gemm tiles: warp_n must be a multiple of 16, got " + std::to_string(t.warp_n));
  require(t.block_m % t.warp_m == 0, "gemm tiles: block_m (" + std::to_string(t.block_m) +
                                         ") must be a multiple of warp_m (" +
                                         std::to_string(t.warp_m) + ")");
  require(t.block_n % t.warp_n == 0, "gemm tiles: block_n (" + std::to_string(t.block_n) +
                                         ") must be a multiple of warp_n (" +
                                         std::to_string(t.warp_n) + ")");
  require(t.block_k % mma_k(in) == 0,
          "gemm tiles: block_k must be a multiple of " + std::to_string(mma_k(in)) + " for " +
              std::string(to_string(in)) + " inputs, got " + std::to_string(t.block_k));
  require(t.split_k >= 1 && t.split_k <= 64,
          "gemm tiles: split_k must be in [1, 64], got " + std::to_string(t.split_k));
  require(t.stages >= 2 && t.stages <= 8,
          "gemm tiles: stages must be in [2, 8], got " + std::to_string(t.stages));
  const int v = t.vector_width;
  require((v & (v - 1)) == 0 && v * elem_bytes(in) <= 16,
          "gemm tiles: vector_width must be a power of two of at most 16 bytes (" +
              std::to_string(16 / elem_bytes(in)) + " " + std::string(to_string(in)) +
              " elements), got " + std::to_string(v));
  require(t.block_k % v == 0, "gemm tiles: block_k (" + std::to_string(t.block_k) +
                                  ") must be a multiple of vector_width (" + std::to_string(v) +
                                  ")");
  require(b_transposed || t.block_n % v == 0, "gemm tiles: block_n (" + std::to_string(t.block_n) +
                                                  ") must be a multiple of vector_width (" +
                                                  std::to_string(v) + ")");
  const int threads = (t.block_m / t.warp_m) * (t.block_n / t.warp_n) * 32;
  require(threads <= kMaxThreadsPerBlock,
          "gemm tiles: (block_m/warp_m)*(block_n/warp_n) warps = " + std::to_string(threads) +
              " threads per block, at most " + std::to_string(kMaxThreadsPerBlock));
  const int shared = gemm_body_shared_bytes(in, b_transposed, t);
  require(shared <= kMaxSharedBytesSm90,
          "gemm tiles: stages x (block_m + block_n) x block_k (or the fp32 block_m x block_n "
          "epilogue tile) needs " +
              std::to_string(shared) + " bytes of shared memory, at most " +
              std::to_string(kMaxSharedBytesSm90) + " on sm_90");
}

std::string gemm_store_code(bool bias, ElemType bias_type,
                            const std::vector<EpilogueStepSpec>& steps, ElemType out,
                            const std::string& batch, const std::string& column,
                            const std::string& out_index) {
  std::string code;
  if (bias) code += "v += " + load_expr(bias_type, "p.bias", column) + ";\n";
  code += epilogue_code(steps, "v", batch, "row", column, "p.operands");
  code += store_stmt(out, "p.c", out_index, "v") + "\n";
  return code;
}

std::string gemm_body_source(const GemmBodySpec& spec) {
  std::string body = kBody;
  const GemmTiles& t = spec.tiles;
  replace_all(body, "{{BM}}", std::to_string(t.block_m));
  replace_all(body, "{{BN}}", std::to_string(t.block_n));
  replace_all(body, "{{BK}}", std::to_string(t.block_k));
  replace_all(body, "{{WM}}", std::to_string(t.warp_m));
  replace_all(body, "{{WN}}", std::to_string(t.warp_n));
  replace_all(body, "{{STAGES}}", std::to_string(t.stages));
  replace_all(body, "{{VA}}", std::to_string(spec.vector_a));
  replace_all(body, "{{VB}}", std::to_string(spec.vector_b));
  replace_all(body, "{{HALF}}", spec.in == ElemType::f32 ? "false" : "true");
  replace_all(body, "{{SPLIT_K}}", std::to_string(t.split_k));
  replace_all(body, "{{SPLIT}}", spec.split_tf32 ? "true" : "false");
  replace_all(body, "{{B_NK}}", spec.b_transposed ? "true" : "false");
  replace_all(body, "{{TIN}}", std::string(storage_type(spec.in)));
  replace_all(body, "{{MMA_TYPE}}", spec.in == ElemType::f16 ? "f16" : "bf16");
  replace_all(body, "{{NAME}}", spec.kernel_name);
  replace_all(body, "{{A_ADDRESS}}", spec.a_address);
  replace_all(body, "{{SETUP}}", spec.setup);
  replace_all(body, "{{STORE}}", spec.store);
  return std::string(device_prelude()) + std::string(epilogue_operand_struct()) +
         spec.params_struct + body;
}

}  // namespace cuvil::runtime::cuda::codegen::detail
