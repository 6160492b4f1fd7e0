// Launches of linear and matmul steps: cuBLAS, cuBLASLt (falling back to cuBLAS) or the
// generated tensor-core GEMM.
#include "runtime/cuda/gpu/step_launch_builders.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "runtime/cuda/attrs.h"

namespace cuvil::runtime::cuda::step_launch {

using ir::OpKind;
using ir::Shape;

namespace {

cudaDataType_t cuda_type(StorageType t) {
  return t == StorageType::f32 ? CUDA_R_32F : t == StorageType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
}

cublasComputeType_t compute_type(Precision p) {
  return p == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// One cuBLAS GEMM in column-major terms (row-major results are computed as their transposes).
struct BlasGemm {
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  int m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int lda = 0;
  long long stride_a = 0;
  const void* b = nullptr;
  int ldb = 0;
  long long stride_b = 0;
  void* c = nullptr;
  int ldc = 0;
  long long stride_c = 0;
  int batch = 1;
  cudaDataType_t ab = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
};

Launch cublas_launch(const DeviceState& s, const BlasGemm& g) {
  cublasHandle_t handle = s.cublas;
  return [handle, g](cudaStream_t) {
    const float alpha = 1.f, beta = 0.f;  // the handle is bound to the executor's stream
    if (g.batch == 1) {
      CUVIL_CUDA_CHECK(cublasGemmEx(handle, g.ta, g.tb, g.m, g.n, g.k, &alpha, g.a, g.ab, g.lda,
                                    g.b, g.ab, g.ldb, &beta, g.c, CUDA_R_32F, g.ldc, g.compute,
                                    CUBLAS_GEMM_DEFAULT));
    } else {
      CUVIL_CUDA_CHECK(cublasGemmStridedBatchedEx(
          handle, g.ta, g.tb, g.m, g.n, g.k, &alpha, g.a, g.ab, g.lda, g.stride_a, g.b, g.ab, g.ldb,
          g.stride_b, &beta, g.c, CUDA_R_32F, g.ldc, g.stride_c, g.batch, g.compute,
          CUBLAS_GEMM_DEFAULT));
    }
  };
}

struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~LtPlan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

cublasLtMatrixLayout_t lt_layout(cudaDataType_t type, int rows, int cols, int ld, int batch,
                                 long long stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  CUVIL_CUDA_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows),
                                              static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    CUVIL_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                      &batch, sizeof(batch)));
    int64_t s = stride;
    CUVIL_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof(s)));
  }
  return layout;
}

// cuBLASLt with its heuristic's first algorithm; empty when the heuristic offers none.
Launch cublaslt_launch(const DeviceState& s, const BlasGemm& g) {
  auto plan = std::make_shared<LtPlan>();
  CUVIL_CUDA_CHECK(cublasLtMatmulDescCreate(&plan->desc, g.compute, CUDA_R_32F));
  CUVIL_CUDA_CHECK(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &g.ta, sizeof(g.ta)));
  CUVIL_CUDA_CHECK(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &g.tb, sizeof(g.tb)));
  const bool ta = g.ta != CUBLAS_OP_N, tb = g.tb != CUBLAS_OP_N;
  plan->a = lt_layout(g.ab, ta ? g.k : g.m, ta ? g.m : g.k, g.lda, g.batch, g.stride_a);
  plan->b = lt_layout(g.ab, tb ? g.n : g.k, tb ? g.k : g.n, g.ldb, g.batch, g.stride_b);
  plan->c = lt_layout(CUDA_R_32F, g.m, g.n, g.ldc, g.batch, g.stride_c);
  cublasLtMatmulPreference_t pref = nullptr;
  CUVIL_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = static_cast<uint64_t>(kCublasWorkspaceBytes);
  CUVIL_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      s.cublaslt, plan->desc, plan->a, plan->b, plan->c, plan->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) return {};
  plan->algo = result.algo;
  cublasLtHandle_t handle = s.cublaslt;
  const DeviceState* state = &s;
  return [handle, plan, g, state](cudaStream_t stream) {
    const float alpha = 1.f, beta = 0.f;
    CUVIL_CUDA_CHECK(cublasLtMatmul(handle, plan->desc, &alpha, g.a, plan->a, g.b, plan->b, &beta,
                                    g.c, plan->c, g.c, plan->c, &plan->algo,
                                    state->cublas_workspace.get(),
                                    static_cast<size_t>(kCublasWorkspaceBytes), stream));
  };
}

// The library launch for a GEMM (cuBLASLt falls back to cuBLAS when its heuristic has nothing).
Launch library_gemm(const DeviceState& s, StepLowering& lowering, const BlasGemm& g) {
  if (lowering.library == Library::cublaslt) {
    if (Launch l = cublaslt_launch(s, g)) return l;
    lowering.fallback = "cuBLASLt's heuristic offered no algorithm: cuBLAS";
    lowering.library = Library::cublas;
    lowering.kernel = lowering.kernel.substr(0, lowering.kernel.find('.')) + ".cublas";
  }
  return cublas_launch(s, g);
}

}  // namespace

void build_linear(Ctx& c) {
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  const int64_t k = x.back(), n = w[0], m = ir::num_elements(x) / std::max<int64_t>(k, 1);
  const bool bias = c.own_inputs() > 2;
  const StorageType type = storage_for(c.lowering.precision);
  if (type != StorageType::f32 && !c.input_is_constant(1)) {
    unsupported(c.step, "16-bit linear needs constant weights (cuda-precision keeps others f32)");
  }
  int64_t scratch = 0;
  const void* a = converted(c, 0, type, &scratch);
  const void* wt = c.raw(1);
  if (c.lowering.library == Library::generated) {
    codegen::GemmProblem p;
    p.m = m, p.n = n, p.k = k;
    p.a = p.b = elem_type(type);
    p.c = codegen::ElemType::f32;
    p.b_transposed = true;
    p.bias = bias;
    const codegen::GemmTiles tiles = gemm_tiles(c.step);
    codegen::validate_gemm(p, tiles);  // UserError names the illegal tile
    const codegen::GemmKernelParams params =
        codegen::gemm_dense_params(p, a, wt, c.y(), bias ? c.in(2) : nullptr);
    c.out.push_back(generated_launch(c.s, codegen::gemm_source(p, tiles),
                                     codegen::gemm_geometry(p, tiles), &params, sizeof params));
    return;
  }
  BlasGemm g;
  g.ta = CUBLAS_OP_T;
  g.tb = CUBLAS_OP_N;
  g.m = to_int(c.step, n, "N");
  g.n = to_int(c.step, m, "M");
  g.k = to_int(c.step, k, "K");
  g.a = wt;
  g.lda = g.k;
  g.b = a;
  g.ldb = g.k;
  g.c = c.y();
  g.ldc = g.m;
  g.ab = cuda_type(type);
  g.compute = compute_type(c.lowering.precision);
  c.out.push_back(library_gemm(c.s, c.lowering, g));
  if (bias) add_bias(c, 2, {n});
}

void build_matmul(Ctx& c) {
  const Shape& a = c.shape(0);
  const Shape& b = c.shape(1);
  const Shape& y = c.step.output_shape;
  if (a.size() < 2 || b.size() < 2) unsupported(c.step, "matmul operands need rank >= 2");
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const int64_t batch = product(y, 0, y.size() - 2);
  const int64_t batch_a = product(a, 0, a.size() - 2), batch_b = product(b, 0, b.size() - 2);
  const StorageType type = storage_for(c.lowering.precision);
  int64_t scratch = 0;
  const char* pa = static_cast<const char*>(converted(c, 0, type, &scratch));
  const char* pb = static_cast<const char*>(converted(c, 1, type, &scratch));
  const int64_t bytes = storage_bytes(type);
  // One strided-batched call when each operand is either full-batch or a single matrix;
  // otherwise one call per result matrix at the broadcast offsets.
  const bool strided = (batch_a == batch || batch_a == 1) && (batch_b == batch || batch_b == 1);
  if (c.lowering.library == Library::generated && strided) {
    codegen::GemmProblem p;
    p.m = m, p.n = n, p.k = k, p.batch = batch;
    p.a = p.b = elem_type(type);
    p.c = codegen::ElemType::f32;
    p.b_transposed = false;
    const codegen::GemmTiles tiles = gemm_tiles(c.step);
    codegen::validate_gemm(p, tiles);
    codegen::GemmKernelParams params = codegen::gemm_dense_params(p, pa, pb, c.y());
    if (batch_a == 1) params.batch_stride_a = 0;
    if (batch_b == 1) params.batch_stride_b = 0;
    c.out.push_back(generated_launch(c.s, codegen::gemm_source(p, tiles),
                                     codegen::gemm_geometry(p, tiles), &params, sizeof params));
    return;
  }
  if (c.lowering.library == Library::generated) {
    c.lowering.library = Library::cublas;
    c.lowering.kernel = "matmul.cublas";
    c.lowering.fallback = "batch dimensions broadcast both ways: cuBLAS per matrix";
  }
  BlasGemm g;
  g.m = to_int(c.step, n, "N");
  g.n = to_int(c.step, m, "M");
  g.k = to_int(c.step, k, "K");
  g.lda = g.m;
  g.ldb = g.k;
  g.ldc = g.m;
  g.ab = cuda_type(type);
  g.compute = compute_type(c.lowering.precision);
  if (strided) {
    g.a = pb;
    g.stride_a = batch_b == 1 ? 0 : k * n;
    g.b = pa;
    g.stride_b = batch_a == 1 ? 0 : m * k;
    g.c = c.y();
    g.stride_c = m * n;
    g.batch = to_int(c.step, batch, "batch");
    c.out.push_back(library_gemm(c.s, c.lowering, g));
    return;
  }
  const size_t rank = y.size();
  for (int64_t i = 0; i < batch; ++i) {
    int64_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t d = rank - 2; d-- > 0;) {
      const int64_t coord = rest % y[d];
      rest /= y[d];
      const size_t da = d + a.size() - rank, db = d + b.size() - rank;
      if (d + a.size() >= rank) {
        if (a[da] != 1) ia += coord * sa;
        sa *= a[da];
      }
      if (d + b.size() >= rank) {
        if (b[db] != 1) ib += coord * sb;
        sb *= b[db];
      }
    }
    BlasGemm one = g;
    one.a = pb + ib * k * n * bytes;
    one.b = pa + ia * m * k * bytes;
    one.c = c.y() + i * m * n;
    c.out.push_back(library_gemm(c.s, c.lowering, one));
  }
}

}  // namespace cuvil::runtime::cuda::step_launch
