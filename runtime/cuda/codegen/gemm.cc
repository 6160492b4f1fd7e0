#include "runtime/cuda/codegen/gemm.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "runtime/cuda/codegen/gemm_body.h"

namespace cuvil::runtime::cuda::codegen {

namespace {

constexpr const char* kParamsStruct = R"CUDA(
struct Params {
  const void* a; const void* b; void* c; const void* bias;
  i64 m, n, k, lda, ldb, ldc, batch_stride_a, batch_stride_b, batch_stride_c;
  EpilogueOperand operands[4];
};
)CUDA";

std::string name_for(const GemmProblem& p, const GemmTiles& t) {
  const std::string vectors = "_va" + std::to_string(gemm_vector_width_a(p, t)) + "_vb" +
                              std::to_string(gemm_vector_width_b(p, t));
  return "cuvil_gemm_" + std::string(to_string(p.a)) + "_" + std::string(to_string(p.c)) + "_" +
         std::to_string(t.block_m) + "x" + std::to_string(t.block_n) + "x" +
         std::to_string(t.block_k) + "_w" + std::to_string(t.warp_m) + "x" +
         std::to_string(t.warp_n) + "_s" + std::to_string(t.stages) + vectors +
         (t.split_k > 1 ? "_k" + std::to_string(t.split_k) : std::string()) +
         (p.b_transposed ? "_nt" : "_nn") + (p.exact_f32 ? "_x3" : "");
}

}  // namespace

int gemm_vector_width_a(const GemmProblem& p, const GemmTiles& t) {
  return detail::legal_vector_width(t.vector_width, p.a, {p.k});
}

int gemm_vector_width_b(const GemmProblem& p, const GemmTiles& t) {
  return detail::legal_vector_width(t.vector_width, p.b, {p.b_transposed ? p.k : p.n});
}

int gemm_shared_bytes(const GemmProblem& p, const GemmTiles& t) {
  return detail::gemm_body_shared_bytes(p.a, p.b_transposed, t);
}

void validate_gemm(const GemmProblem& p, const GemmTiles& t) {
  if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1) {
    throw UserError("gemm: m, n, k and batch must be positive, got m=" + std::to_string(p.m) +
                    " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
                    " batch=" + std::to_string(p.batch));
  }
  if (p.a != p.b) {
    throw UserError("gemm: A and B must have the same type, got " + std::string(to_string(p.a)) +
                    " and " + std::string(to_string(p.b)));
  }
  if (p.exact_f32 && p.a != ElemType::f32) {
    throw UserError("gemm: exact_f32 (3xTF32) needs f32 inputs, got " +
                    std::string(to_string(p.a)));
  }
  if (t.split_k > 1 && (p.c != ElemType::f32 || !p.epilogue.empty())) {
    throw UserError(
        "gemm: split_k > 1 accumulates atomically: it needs an f32 output and no "
        "epilogue steps");
  }
  if (p.batch * std::max(t.split_k, 1) > 65535) {
    throw UserError("gemm: batch x split_k = " + std::to_string(p.batch * t.split_k) + " > 65535");
  }
  if ((p.m + t.block_m - 1) / std::max(t.block_m, 1) > 65535) {
    throw UserError("gemm: m=" + std::to_string(p.m) + " needs more than 65535 row blocks");
  }
  detail::validate_gemm_tiles(p.a, p.b_transposed, t);
  validate_epilogue(p.epilogue);
}

KernelSource gemm_source(const GemmProblem& p, const GemmTiles& t) {
  validate_gemm(p, t);
  detail::GemmBodySpec spec;
  spec.kernel_name = name_for(p, t);
  spec.in = p.a;
  spec.out = p.c;
  spec.b_transposed = p.b_transposed;
  spec.split_tf32 = p.exact_f32;
  spec.vector_a = gemm_vector_width_a(p, t);
  spec.vector_b = gemm_vector_width_b(p, t);
  spec.tiles = t;
  spec.params_struct = kParamsStruct;
  spec.setup =
      "  M = p.m; N = p.n; K = p.k; ldb = p.ldb;\n"
      "  B = (const TIn*)p.b + z * p.batch_stride_b;\n";
  spec.a_address =
      "  if (row >= M || kcol >= K) return false;\n"
      "  *src = (const TIn*)p.a + z * p.batch_stride_a + row * p.lda + kcol;\n"
      "  return true;\n";
  if (t.split_k > 1) {
    spec.store = (p.bias ? "if (split == 0) v += " + load_expr(p.bias_type, "p.bias", "col") + ";\n"
                         : std::string()) +
                 "atomicAdd((float*)p.c + z * p.batch_stride_c + row * p.ldc + col, v);\n";
  } else {
    spec.store = detail::gemm_store_code(p.bias, p.bias_type, p.epilogue, p.c, "z", "col",
                                         "z * p.batch_stride_c + row * p.ldc + col");
  }
  return KernelSource{spec.kernel_name, detail::gemm_body_source(spec), {"--std=c++17"}};
}

LaunchGeometry gemm_geometry(const GemmProblem& p, const GemmTiles& t) {
  validate_gemm(p, t);
  LaunchGeometry g;
  g.grid[0] = detail::ceil_div(p.n, t.block_n);
  g.grid[1] = detail::ceil_div(p.m, t.block_m);
  g.grid[2] = static_cast<unsigned>(p.batch * t.split_k);
  g.block[0] = (t.block_m / t.warp_m) * (t.block_n / t.warp_n) * 32;
  g.shared_bytes = static_cast<unsigned>(gemm_shared_bytes(p, t));
  return g;
}

GemmTiles default_gemm_tiles(const GemmProblem& p, int sm_count) {
  const int vector = p.a == ElemType::f32 ? 4 : 8;
  auto blocks = [&](int bm, int bn) {
    return ((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn) * p.batch;
  };
  if (p.m <= 16) {
    GemmTiles t{16, 64, 64, 16, 32, 4, vector};
    if (p.c == ElemType::f32 && p.epilogue.empty()) {
      // Split K while the grid is under one block per SM and each split keeps >= 256 of K.
      while (t.split_k < 8 && blocks(16, 64) * t.split_k < sm_count &&
             p.k / (t.split_k * 2) >= 256 && p.batch * t.split_k * 2 <= 65535) {
        t.split_k *= 2;
      }
    }
    return t;
  }
  if (p.m <= 64 || blocks(128, 128) < sm_count) return GemmTiles{64, 64, 32, 32, 32, 4, vector};
  return GemmTiles{128, 128, 32, 64, 64, 3, vector};
}

void check_gemm_params(const GemmProblem& p, const GemmTiles& t, const GemmKernelParams& params) {
  auto check = [](const void* pointer, int64_t ld, int64_t batch_stride, int width, int bytes,
                  const char* operand) {
    const auto address = reinterpret_cast<uintptr_t>(pointer);
    if (address % static_cast<uintptr_t>(width * bytes) != 0 || ld % width != 0 ||
        batch_stride % width != 0) {
      throw UserError(std::string("gemm: operand ") + operand + " (address " +
                      std::to_string(address) + ", leading dimension " + std::to_string(ld) +
                      ", batch stride " + std::to_string(batch_stride) +
                      ") is not aligned to the kernel's " + std::to_string(width) +
                      "-element vector loads");
    }
  };
  check(params.a, params.lda, params.batch_stride_a, gemm_vector_width_a(p, t), elem_bytes(p.a),
        "A");
  check(params.b, params.ldb, params.batch_stride_b, gemm_vector_width_b(p, t), elem_bytes(p.b),
        "B");
  // K (and N for a [K, N] B) at launch must keep the vectors inside rows, as at generation.
  const int va = gemm_vector_width_a(p, t), vb = gemm_vector_width_b(p, t);
  if (params.k % va != 0 || (p.b_transposed ? params.k % vb : params.n % vb) != 0) {
    throw UserError(
        "gemm: launch sizes k=" + std::to_string(params.k) + " n=" + std::to_string(params.n) +
        " break the vector widths the kernel was generated for (k=" + std::to_string(p.k) +
        " n=" + std::to_string(p.n) + ")");
  }
}

GemmKernelParams gemm_dense_params(const GemmProblem& p, const void* a, const void* b, void* c,
                                   const void* bias) {
  GemmKernelParams params;
  params.a = a;
  params.b = b;
  params.c = c;
  params.bias = bias;
  params.m = p.m;
  params.n = p.n;
  params.k = p.k;
  params.lda = p.k;
  params.ldb = p.b_transposed ? p.k : p.n;
  params.ldc = p.n;
  params.batch_stride_a = p.m * p.k;
  params.batch_stride_b = p.k * p.n;
  params.batch_stride_c = p.m * p.n;
  return params;
}

}  // namespace cuvil::runtime::cuda::codegen
