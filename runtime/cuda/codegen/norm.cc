#include "runtime/cuda/codegen/norm.h"

#include <string>

#include "base/error.h"
#include "runtime/cuda/codegen/gemm_body.h"

namespace cuvil::runtime::cuda::codegen {

namespace {

std::string_view kind_name(NormKind kind) {
  switch (kind) {
    case NormKind::layer_norm:
      return "layer_norm";
    case NormKind::rms_norm:
      return "rms_norm";
    case NormKind::group_norm:
      return "group_norm";
    case NormKind::softmax:
      return "softmax";
  }
  return "?";
}

// The vector width the kernel uses: chunks of VW elements must be contiguous and aligned.
int effective_width(const NormProblem& p, const NormTiles& t) {
  if (p.kind == NormKind::group_norm) {
    const int64_t cg = p.c / p.groups;
    return p.nhwc ? detail::legal_vector_width(t.vector_width, p.io, {cg, p.c})
                  : detail::legal_vector_width(t.vector_width, p.io, {cg * p.spatial});
  }
  return detail::legal_vector_width(t.vector_width, p.io, {p.dim});
}

// Thread mapping: one block per row (per (image, group) for group_norm). Thread t handles the
// chunks of VW consecutive row elements starting at t*VW, t*VW + THREADS*VW, ...; block-wide
// reductions go through warp shuffles and a 33-float shared scratch. Three passes over the row:
// statistic 1 (sum / sum of squares / max), statistic 2 (centred squares / exp sum), write.
constexpr const char* kKernel = R"CUDA(
struct Params { const void* x; void* y; const void* gamma; const void* beta;
                i64 rows, dim, n, c, spatial, groups; double eps; };
constexpr int THREADS = {{THREADS}}, VW = {{VW}}, WARPS = THREADS / 32;
constexpr int KIND = {{KIND}};  // 0 layer_norm, 1 rms_norm, 2 group_norm, 3 softmax
constexpr bool NHWC = {{NHWC}};
typedef {{TIO}} TIo;
struct __align__(VW * sizeof(TIo)) Chunk { TIo v[VW]; };

__device__ __forceinline__ float block_reduce(float v, bool is_max, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = is_max ? cuvil_warp_max(v) : cuvil_warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < WARPS ? scratch[lane] : (is_max ? -INFINITY : 0.f);
    v = is_max ? cuvil_warp_max(v) : cuvil_warp_sum(v);
    if (lane == 0) scratch[32] = v;
  }
  __syncthreads();
  const float result = scratch[32];
  __syncthreads();  // scratch is reused by the next reduction
  return result;
}

extern "C" __global__ void __launch_bounds__(THREADS) {{NAME}}(const Params p) {
  __shared__ float scratch[33];
  i64 count, base, cg = 1;
  i64 group = 0;
  if (KIND == 2) {
    const i64 image = blockIdx.x / p.groups;
    group = blockIdx.x % p.groups;
    cg = p.c / p.groups;
    count = cg * p.spatial;
    base = NHWC ? image * p.spatial * p.c + group * cg : (image * p.c + group * cg) * p.spatial;
  } else {
    count = p.dim;
    base = (i64)blockIdx.x * p.dim;
  }
  // Offset of row element i (a chunk never straddles a discontinuity: VW divides the runs).
  auto offset = [&](i64 i) -> i64 {
    return (KIND == 2 && NHWC) ? base + (i / cg) * p.c + i % cg : base + i;
  };
  auto channel = [&](i64 i) -> i64 { return group * cg + (NHWC ? i % cg : i / p.spatial); };
  const TIo* x = (const TIo*)p.x;
  TIo* y = (TIo*)p.y;

  float s1 = KIND == 3 ? -INFINITY : 0.f;
  for (i64 i = (i64)threadIdx.x * VW; i < count; i += (i64)THREADS * VW) {
    const Chunk chunk = *(const Chunk*)(x + offset(i));
#pragma unroll
    for (int v = 0; v < VW; ++v) {
      const float xv = {{TO_F32_CHUNK}};
      if (KIND == 3) s1 = fmaxf(s1, xv);
      else if (KIND == 1) s1 += xv * xv;
      else s1 += xv;
    }
  }
  s1 = block_reduce(s1, KIND == 3, scratch);
  const float mean = KIND == 0 || KIND == 2 ? s1 / (float)count : 0.f;
  float s2 = 0.f;
  if (KIND != 1) {
    for (i64 i = (i64)threadIdx.x * VW; i < count; i += (i64)THREADS * VW) {
      const Chunk chunk = *(const Chunk*)(x + offset(i));
#pragma unroll
      for (int v = 0; v < VW; ++v) {
        const float xv = {{TO_F32_CHUNK}};
        if (KIND == 3) s2 += __expf(xv - s1);
        else s2 += (xv - mean) * (xv - mean);
      }
    }
    s2 = block_reduce(s2, false, scratch);
  }
  float scale;
  if (KIND == 3) scale = 1.f / s2;
  else if (KIND == 1) scale = rsqrtf(s1 / (float)count + (float)p.eps);
  else scale = rsqrtf(s2 / (float)count + (float)p.eps);
  for (i64 i = (i64)threadIdx.x * VW; i < count; i += (i64)THREADS * VW) {
    const Chunk chunk = *(const Chunk*)(x + offset(i));
    Chunk out;
#pragma unroll
    for (int v = 0; v < VW; ++v) {
      const float xv = {{TO_F32_CHUNK}};
      float r;
      if (KIND == 3) {
        r = __expf(xv - s1) * scale;
      } else {
        const i64 ch = KIND == 2 ? channel(i + v) : i + v;
        r = (xv - mean) * scale * {{GAMMA}};
        if (KIND != 1) r += {{BETA}};
      }
      out.v[v] = {{FROM_F32_R}};
    }
    *(Chunk*)(y + offset(i)) = out;
  }
}
)CUDA";

}  // namespace

void validate_norm(const NormProblem& p, const NormTiles& t) {
  require(t.threads >= 32 && t.threads <= kMaxThreadsPerBlock && t.threads % 32 == 0,
          "norm tiles: threads must be a multiple of 32 in [32, 1024], got " +
              std::to_string(t.threads));
  require(t.vector_width >= 1 && (t.vector_width & (t.vector_width - 1)) == 0 &&
              t.vector_width * elem_bytes(p.io) <= 16,
          "norm tiles: vector_width must be a power of two of at most 16 bytes, got " +
              std::to_string(t.vector_width));
  if (p.kind == NormKind::group_norm) {
    require(p.n > 0 && p.c > 0 && p.spatial > 0 && p.groups > 0,
            "group_norm: n, c, spatial and groups must be positive");
    require(p.c % p.groups == 0, "group_norm: groups (" + std::to_string(p.groups) +
                                     ") must divide C (" + std::to_string(p.c) + ")");
  } else {
    require(p.rows > 0 && p.dim > 0,
            std::string(kind_name(p.kind)) + ": rows and dim must be positive");
  }
  require(p.eps >= 0, "norm: eps must be non-negative");
}

KernelSource norm_source(const NormProblem& p, const NormTiles& t) {
  validate_norm(p, t);
  const int vw = effective_width(p, t);
  const std::string name = "cuvil_" + std::string(kind_name(p.kind)) + "_" +
                           std::string(to_string(p.io)) + (p.nhwc ? "_nhwc" : "") + "_t" +
                           std::to_string(t.threads) + "_v" + std::to_string(vw);
  std::string body = kKernel;
  replace_all(body, "{{THREADS}}", std::to_string(t.threads));
  replace_all(body, "{{VW}}", std::to_string(vw));
  replace_all(body, "{{KIND}}", std::to_string(static_cast<int>(p.kind)));
  replace_all(body, "{{NHWC}}", p.nhwc ? "true" : "false");
  replace_all(body, "{{TIO}}", std::string(storage_type(p.io)));
  replace_all(body, "{{NAME}}", name);
  replace_all(body, "{{TO_F32_CHUNK}}", to_f32_expr(p.io, "chunk.v[v]"));
  replace_all(body, "{{FROM_F32_R}}", from_f32_expr(p.io, "r"));
  replace_all(body, "{{GAMMA}}", load_expr(p.param, "p.gamma", "ch"));
  replace_all(body, "{{BETA}}", load_expr(p.param, "p.beta", "ch"));
  return KernelSource{name, std::string(device_prelude()) + body, {"--std=c++17"}};
}

LaunchGeometry norm_geometry(const NormProblem& p, const NormTiles& t) {
  validate_norm(p, t);
  LaunchGeometry g;
  g.grid[0] = static_cast<unsigned>(p.kind == NormKind::group_norm ? p.n * p.groups : p.rows);
  g.block[0] = static_cast<unsigned>(t.threads);
  return g;
}

NormKernelParams norm_params(const NormProblem& p, const void* x, void* y, const void* gamma,
                             const void* beta) {
  NormKernelParams params;
  params.x = x;
  params.y = y;
  params.gamma = gamma;
  params.beta = beta;
  params.rows = p.rows;
  params.dim = p.dim;
  params.n = p.n;
  params.c = p.c;
  params.spatial = p.spatial;
  params.groups = p.groups;
  params.eps = p.eps;
  return params;
}

}  // namespace cuvil::runtime::cuda::codegen
