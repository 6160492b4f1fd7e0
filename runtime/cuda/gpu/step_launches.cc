// Per-op launch builders of the GPU executor. Every geometry is derived here from the step's
// shapes; every pointer comes from the DeviceLayout. Nothing here allocates or synchronises
// inside a Launch (capture-safe); descriptors, algorithm choices and kernel compilation happen
// while the launches are built.
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "runtime/cuda/attrs.h"
#include "runtime/cuda/codegen/attention.h"
#include "runtime/cuda/codegen/conv.h"
#include "runtime/cuda/codegen/gemm.h"
#include "runtime/cuda/codegen/norm.h"
#include "runtime/cuda/gpu/executor_state.h"

namespace cuvil::runtime::cuda {

namespace {

using ir::OpKind;
using ir::Shape;
namespace sk = simple;

[[noreturn]] void unsupported(const Step& step, const std::string& why) {
  throw UserError("node '" + step.node_name + "' (" + std::string(ir::to_string(step.op)) +
                  ") cannot run on CUDA: " + why);
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) p *= s[i];
  return p;
}

bool is_nhwc(const Step& step) {
  const std::string layout = step.attrs.get_string("layout", "nchw");
  if (layout != "nchw" && layout != "nhwc") {
    unsupported(step, "layout '" + layout + "' (the CUDA backend runs nchw and nhwc)");
  }
  return layout == "nhwc";
}

int to_int(const Step& step, int64_t v, const char* what) {
  if (v > INT32_MAX) unsupported(step, std::string(what) + " exceeds 2^31");
  return static_cast<int>(v);
}

// Element strides of `in` broadcast (numpy rules, right-aligned) to `out`.
void broadcast_strides(const Step& step, const Shape& in, const Shape& out, int64_t* strides) {
  const size_t rank = out.size();
  int64_t stride = 1;
  for (size_t k = 0; k < rank; ++k) {
    const size_t d = rank - 1 - k;
    strides[d] = 0;
    if (k < in.size()) {
      const int64_t dim = in[in.size() - 1 - k];
      if (dim != 1 && dim != out[d]) unsupported(step, "operand does not broadcast to the result");
      strides[d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
}

Launch ew_launch(const DeviceState& s, const Step& step, sk::EwOp op, const float* a,
                 const Shape& a_shape, const float* b, const Shape& b_shape, float* y,
                 const Shape& out) {
  if (out.size() > static_cast<size_t>(sk::kMaxRank)) unsupported(step, "rank above 8");
  sk::EwParams p{};
  p.a = a;
  p.b = b;
  p.y = y;
  p.total = ir::num_elements(out);
  p.rank = static_cast<int64_t>(std::max<size_t>(out.size(), 1));
  p.op = op;
  if (out.empty()) {
    p.dims[0] = 1;
  } else {
    for (size_t d = 0; d < out.size(); ++d) p.dims[d] = out[d];
    broadcast_strides(step, a_shape, out, p.a_strides);
    if (b != nullptr) broadcast_strides(step, b_shape, out, p.b_strides);
  }
  return simple_launch(*s.simple, "cuvil_ew", dim3(sk::grid_for(p.total)), dim3(sk::kThreads), p);
}

sk::EwOp ew_op(const Step& step, OpKind op) {
  switch (op) {
    case OpKind::add:
      return sk::kAdd;
    case OpKind::sub:
      return sk::kSub;
    case OpKind::mul:
      return sk::kMul;
    case OpKind::div:
      return sk::kDiv;
    case OpKind::relu:
      return sk::kRelu;
    case OpKind::silu:
      return sk::kSilu;
    case OpKind::gelu:
      return sk::kGelu;
    case OpKind::sigmoid:
      return sk::kSigmoid;
    default:
      unsupported(step, "not an elementwise op");
  }
}

int64_t type_code(StorageType t) {
  return t == StorageType::f32 ? 0 : t == StorageType::bf16 ? 1 : 2;
}

Launch convert_launch(const DeviceState& s, const void* src, StorageType from, void* dst,
                      StorageType to, int64_t count) {
  sk::ConvertParams p{src, dst, count, type_code(from), type_code(to)};
  return simple_launch(*s.simple, "cuvil_convert", dim3(sk::grid_for(count)), dim3(sk::kThreads),
                       p);
}

cudaDataType_t cuda_type(StorageType t) {
  return t == StorageType::f32 ? CUDA_R_32F : t == StorageType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
}

cublasComputeType_t compute_type(Precision p) {
  return p == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

codegen::ElemType elem_type(StorageType t) {
  return t == StorageType::f32    ? codegen::ElemType::f32
         : t == StorageType::bf16 ? codegen::ElemType::bf16
                                  : codegen::ElemType::f16;
}

codegen::GemmTiles gemm_tiles(const Step& step) {
  codegen::GemmTiles t;
  t.block_m = static_cast<int>(step.attrs.get_int(attrs::kGemmBlockM, t.block_m));
  t.block_n = static_cast<int>(step.attrs.get_int(attrs::kGemmBlockN, t.block_n));
  t.block_k = static_cast<int>(step.attrs.get_int(attrs::kGemmBlockK, t.block_k));
  t.warp_m = static_cast<int>(step.attrs.get_int(attrs::kGemmWarpM, t.warp_m));
  t.warp_n = static_cast<int>(step.attrs.get_int(attrs::kGemmWarpN, t.warp_n));
  t.stages = static_cast<int>(step.attrs.get_int(attrs::kGemmStages, t.stages));
  t.vector_width = static_cast<int>(step.attrs.get_int(attrs::kGemmVectorWidth, t.vector_width));
  return t;
}

Launch generated_launch(DeviceState& s, const codegen::KernelSource& source,
                        const codegen::LaunchGeometry& geometry, const void* params, size_t size) {
  codegen::LoadedKernel* kernel = s.load(source);
  auto bytes = std::make_shared<std::vector<char>>(static_cast<const char*>(params),
                                                   static_cast<const char*>(params) + size);
  return [kernel, geometry, bytes](cudaStream_t stream) {
    kernel->launch(geometry, bytes->data(), stream);
  };
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

struct Ctx {
  DeviceState& s;
  const Plan& plan;
  const DeviceLayout& layout;
  const Step& step;
  StepLowering& lowering;
  std::vector<Launch>& out;
  const float* in(size_t i) const {
    return static_cast<const float*>(input_pointer(s, plan, layout, step, lowering, i));
  }
  const void* raw(size_t i) const { return input_pointer(s, plan, layout, step, lowering, i); }
  float* y() const {
    return reinterpret_cast<float*>(s.tensor_f32[static_cast<size_t>(step.output)]);
  }
  const Shape& shape(size_t i) const { return step.input_shapes[i]; }
  size_t own_inputs() const {
    return step.inputs.size() - ir::epilogue_operand_count(step.epilogue);
  }
  bool input_is_constant(size_t i) const {
    return plan.tensors[static_cast<size_t>(step.inputs[i])].storage ==
           PlanTensor::Storage::constant;
  }
};

// Operands converted into scratch for 16-bit GEMMs: returns (pointer, next free scratch byte).
const void* converted(Ctx& c, size_t input, StorageType type, int64_t* scratch_offset) {
  if (type == StorageType::f32) return c.in(input);
  // Constant weights were uploaded in the step's type (layout_device_memory).
  if (input == 1 && c.input_is_constant(1) && c.step.op != OpKind::matmul) return c.raw(1);
  const int64_t count = ir::num_elements(c.shape(input));
  char* dst = c.s.scratch.get() + *scratch_offset;
  *scratch_offset += align_device(count * storage_bytes(type));
  CUVIL_CHECK(*scratch_offset <= c.s.scratch.bytes(), "scratch smaller than layout said");
  c.out.push_back(convert_launch(c.s, c.in(input), StorageType::f32, dst, type, count));
  return dst;
}

void add_bias(Ctx& c, size_t bias_input, const Shape& bias_shape_in_result) {
  c.out.push_back(ew_launch(c.s, c.step, sk::kAdd, c.y(), c.step.output_shape, c.in(bias_input),
                            bias_shape_in_result, c.y(), c.step.output_shape));
}

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

cudnnDataType_t cudnn_type(StorageType t) {
  return t == StorageType::f32    ? CUDNN_DATA_FLOAT
         : t == StorageType::bf16 ? CUDNN_DATA_BFLOAT16
                                  : CUDNN_DATA_HALF;
}

void build_conv(Ctx& c) {
  const bool nhwc = is_nhwc(c.step);
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  const Shape& y = c.step.output_shape;
  const int64_t n = x[0], ch = nhwc ? x[3] : x[1], h = nhwc ? x[1] : x[2], wd = nhwc ? x[2] : x[3];
  const int64_t o = w[0], kh = w[2], kw = w[3];
  const int64_t oh = nhwc ? y[1] : y[2], ow = nhwc ? y[2] : y[3];
  const auto stride = c.step.attrs.get_ints("stride", {1, 1});
  const auto pad = c.step.attrs.get_ints("pad", {0, 0});
  const int64_t groups = c.step.attrs.get_int("groups", 1);
  const bool bias = c.own_inputs() > 2;
  const StorageType type = storage_for(c.lowering.precision);
  int64_t scratch = 0;
  const void* px = converted(c, 0, type, &scratch);
  const void* pw = c.raw(1);
  if (c.lowering.library == Library::generated) {
    codegen::ConvProblem p;
    p.n = n, p.h = h, p.w = wd, p.c = ch, p.o = o, p.kh = kh, p.kw = kw;
    p.stride_h = stride[0], p.stride_w = stride[1], p.pad_h = pad[0], p.pad_w = pad[1];
    p.groups = groups;
    p.x = p.weight = elem_type(type);
    p.y = codegen::ElemType::f32;
    p.bias = bias;
    const codegen::GemmTiles tiles = gemm_tiles(c.step);
    codegen::validate_conv(p, tiles);
    const codegen::ConvKernelParams params =
        codegen::conv_params(p, px, pw, c.y(), bias ? c.in(2) : nullptr);
    c.out.push_back(generated_launch(c.s, codegen::conv_source(p, tiles),
                                     codegen::conv_geometry(p, tiles), &params, sizeof params));
    return;
  }
  auto conv = std::make_unique<CudnnConv>();
  const cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const cudnnDataType_t dt = cudnn_type(type);
  CUVIL_CUDA_CHECK(cudnnCreateTensorDescriptor(&conv->x));
  CUVIL_CUDA_CHECK(cudnnCreateTensorDescriptor(&conv->y));
  CUVIL_CUDA_CHECK(cudnnCreateFilterDescriptor(&conv->w));
  CUVIL_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&conv->conv));
  const int in = to_int(c.step, n, "N"), ic = to_int(c.step, ch, "C"), ih = to_int(c.step, h, "H"),
            iw = to_int(c.step, wd, "W");
  CUVIL_CUDA_CHECK(cudnnSetTensor4dDescriptor(conv->x, format, dt, in, ic, ih, iw));
  CUVIL_CUDA_CHECK(cudnnSetFilter4dDescriptor(conv->w, dt, format, static_cast<int>(o),
                                              static_cast<int>(w[1]), static_cast<int>(kh),
                                              static_cast<int>(kw)));
  CUVIL_CUDA_CHECK(cudnnSetConvolution2dDescriptor(
      conv->conv, static_cast<int>(pad[0]), static_cast<int>(pad[1]), static_cast<int>(stride[0]),
      static_cast<int>(stride[1]), 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUVIL_CUDA_CHECK(cudnnSetConvolutionGroupCount(conv->conv, static_cast<int>(groups)));
  // f32: no tensor cores (TF32 would break the fp32 bound); tf32: cuDNN's default allows TF32.
  const cudnnMathType_t math = type != StorageType::f32                  ? CUDNN_TENSOR_OP_MATH
                               : c.lowering.precision == Precision::tf32 ? CUDNN_DEFAULT_MATH
                                                                         : CUDNN_FMA_MATH;
  CUVIL_CUDA_CHECK(cudnnSetConvolutionMathType(conv->conv, math));
  int on = 0, oc = 0, ooh = 0, oow = 0;
  CUVIL_CUDA_CHECK(
      cudnnGetConvolution2dForwardOutputDim(conv->conv, conv->x, conv->w, &on, &oc, &ooh, &oow));
  CUVIL_CHECK(on == n && oc == o && ooh == oh && oow == ow,
              "cuDNN's conv output shape differs from the IR's for '" + c.step.node_name + "'");
  CUVIL_CUDA_CHECK(cudnnSetTensor4dDescriptor(conv->y, format, dt, on, oc, ooh, oow));
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  CUVIL_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(c.s.cudnn, conv->x, conv->w, conv->conv,
                                                          conv->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                          &returned, perf));
  auto pick = [&](bool exact_fp32) {
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kCudnnWorkspaceLimit) continue;
      if (exact_fp32 && perf[i].mathType != CUDNN_FMA_MATH) continue;
      return i;
    }
    return -1;
  };
  int chosen = pick(math == CUDNN_FMA_MATH);
  if (chosen < 0 && math == CUDNN_FMA_MATH) {
    // Run, but say so: verify will hold it to the fp32 bound and show the cost.
    chosen = pick(false);
    if (chosen >= 0) {
      c.lowering.fallback =
          "cuDNN has no exact-fp32 (FMA) algorithm for this convolution: it may "
          "use TF32 tensor cores";
    }
  }
  if (chosen < 0) unsupported(c.step, "cuDNN offers no algorithm within the workspace limit");
  conv->algo = perf[chosen].algo;
  conv->workspace = perf[chosen].memory;
  CUVIL_CUDA_CHECK(cudnnSetConvolutionMathType(conv->conv, perf[chosen].mathType));
  c.s.cudnn_workspace_needed = std::max(c.s.cudnn_workspace_needed, conv->workspace);
  void* py = c.y();
  if (type != StorageType::f32) {
    py = c.s.scratch.get() + scratch;
    scratch += align_device(ir::num_elements(y) * storage_bytes(type));
    CUVIL_CHECK(scratch <= c.s.scratch.bytes(), "scratch smaller than layout said");
  }
  const CudnnConv* desc = conv.get();
  c.s.convs.push_back(std::move(conv));
  cudnnHandle_t handle = c.s.cudnn;
  const DeviceState* state = &c.s;
  c.out.push_back([handle, desc, px, pw, py, state](cudaStream_t) {
    const float alpha = 1.f, beta = 0.f;
    CUVIL_CUDA_CHECK(cudnnConvolutionForward(handle, &alpha, desc->x, px, desc->w, pw, desc->conv,
                                             desc->algo, state->cudnn_workspace.get(),
                                             desc->workspace, &beta, desc->y, py));
  });
  if (type != StorageType::f32) {
    c.out.push_back(convert_launch(c.s, py, type, c.y(), StorageType::f32, ir::num_elements(y)));
  }
  if (bias) add_bias(c, 2, nhwc ? Shape{o} : Shape{o, 1, 1});
}

void build_sdpa(Ctx& c) {
  const Shape& q = c.shape(0);
  const Shape& k = c.shape(1);
  const Shape& v = c.shape(2);
  const bool causal = c.step.attrs.get_int("causal", 0) != 0;
  const double scale = c.step.attrs.get_float("scale", 1.0 / std::sqrt(static_cast<double>(q[3])));
  if (c.lowering.library == Library::generated) {
    codegen::AttentionProblem p;
    p.batch = q[0], p.heads_q = q[1], p.heads_kv = k[1], p.seq_q = q[2], p.seq_kv = k[2];
    p.head_dim = q[3], p.head_dim_v = v[3];
    p.causal = causal;
    p.scale = scale;
    p.type = codegen::ElemType::f32;
    codegen::AttentionTiles t;
    t.block_q = static_cast<int>(c.step.attrs.get_int(attrs::kAttentionBlockQ, t.block_q));
    t.block_kv = static_cast<int>(c.step.attrs.get_int(attrs::kAttentionBlockKv, t.block_kv));
    t.warps = static_cast<int>(c.step.attrs.get_int(attrs::kAttentionWarps, t.warps));
    try {
      codegen::validate_attention(p, t);
      const codegen::AttentionKernelParams params =
          codegen::attention_dense_params(p, c.in(0), c.in(1), c.in(2), c.y());
      c.out.push_back(generated_launch(c.s, codegen::attention_source(p, t),
                                       codegen::attention_geometry(p, t), &params, sizeof params));
      return;
    } catch (const UserError& e) {
      // The simple kernel runs every shape: say why the generated one did not.
      c.lowering.kernel = "sdpa.simple";
      c.lowering.library = Library::simple;
      c.lowering.fallback = std::string("generated attention rejected the node: ") + e.what();
    }
  }
  if (q[3] > sk::kSdpaMaxHeadDim || v[3] > sk::kSdpaMaxHeadDim) {
    unsupported(c.step, "head dim above 256");
  }
  if (q[1] > 65535 || q[0] > 65535) unsupported(c.step, "more than 65535 heads or batches");
  sk::SdpaParams p{c.in(0), c.in(1), c.in(2), c.y(), q[0],           q[1], k[1],
                   q[2],    k[2],    q[3],    v[3],  causal ? 1 : 0, scale};
  const dim3 grid(static_cast<unsigned>((q[2] + sk::kSdpaWarps - 1) / sk::kSdpaWarps),
                  static_cast<unsigned>(q[1]), static_cast<unsigned>(q[0]));
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_sdpa", grid, dim3(32 * sk::kSdpaWarps), p));
}

unsigned row_threads(int64_t len) {
  // Whole warps, at most 256, enough for short rows.
  return static_cast<unsigned>(std::clamp<int64_t>((len + 31) / 32 * 32, 32, 256));
}

// The generated row-reduction kernels (layer/RMS/group norm, last-axis softmax); false when the
// generator rejects the node (the caller runs the simple kernel, and says why).
bool generated_norm(Ctx& c) {
  if (c.lowering.library != Library::generated) return false;
  const Shape& x = c.shape(0);
  codegen::NormProblem p;
  p.io = codegen::ElemType::f32;
  p.param = codegen::ElemType::f32;
  p.eps = c.step.attrs.get_float("eps", 1e-5);
  const void* gamma = nullptr;
  const void* beta = nullptr;
  switch (c.step.op) {
    case OpKind::group_norm: {
      const bool nhwc = is_nhwc(c.step);
      p.kind = codegen::NormKind::group_norm;
      p.n = x[0];
      p.c = nhwc ? x[3] : x[1];
      p.spatial = nhwc ? x[1] * x[2] : x[2] * x[3];
      p.groups = c.step.attrs.get_int("groups", 32);
      p.nhwc = nhwc;
      gamma = c.in(1);
      beta = c.in(2);
      break;
    }
    case OpKind::layer_norm:
    case OpKind::rms_norm:
    case OpKind::softmax:
      p.kind = c.step.op == OpKind::layer_norm ? codegen::NormKind::layer_norm
               : c.step.op == OpKind::rms_norm ? codegen::NormKind::rms_norm
                                               : codegen::NormKind::softmax;
      p.dim = x.back();
      p.rows = ir::num_elements(x) / std::max<int64_t>(p.dim, 1);
      if (c.step.op != OpKind::softmax) gamma = c.in(1);
      if (c.step.op == OpKind::layer_norm) beta = c.in(2);
      break;
    default:
      return false;
  }
  const codegen::NormTiles tiles;
  try {
    codegen::validate_norm(p, tiles);
    const codegen::NormKernelParams params = codegen::norm_params(p, c.in(0), c.y(), gamma, beta);
    c.out.push_back(generated_launch(c.s, codegen::norm_source(p, tiles),
                                     codegen::norm_geometry(p, tiles), &params, sizeof params));
    return true;
  } catch (const UserError& e) {
    c.lowering.fallback = std::string("the generated kernel rejected the node: ") + e.what();
    c.lowering.library = Library::simple;
    c.lowering.kernel = std::string(ir::to_string(c.step.op)) + ".simple";
    return false;
  }
}

void build_norm(Ctx& c) {
  if (generated_norm(c)) return;
  const Shape& x = c.shape(0);
  const double eps = c.step.attrs.get_float("eps", 1e-5);
  if (c.step.op == OpKind::group_norm) {
    const bool nhwc = is_nhwc(c.step);
    const int64_t groups = c.step.attrs.get_int("groups", 32);
    sk::GroupNormParams p{c.in(0),
                          c.y(),
                          c.in(1),
                          c.in(2),
                          x[0],
                          nhwc ? x[3] : x[1],
                          nhwc ? x[1] * x[2] : x[2] * x[3],
                          groups,
                          nhwc ? 1 : 0,
                          eps};
    if (p.c % groups != 0) unsupported(c.step, "channels not divisible by groups");
    c.out.push_back(simple_launch(*c.s.simple, "cuvil_group_norm",
                                  dim3(static_cast<unsigned>(x[0] * groups)), dim3(512), p));
    return;
  }
  if (c.step.op == OpKind::batch_norm) {
    const bool nhwc = is_nhwc(c.step);
    const int64_t total = ir::num_elements(x);
    sk::BatchNormParams p{c.in(0),
                          c.y(),
                          c.in(1),
                          c.in(2),
                          c.in(3),
                          c.in(4),
                          total,
                          nhwc ? x[3] : x[1],
                          nhwc ? 1 : x[2] * x[3],
                          eps};
    c.out.push_back(simple_launch(*c.s.simple, "cuvil_batch_norm", dim3(sk::grid_for(total)),
                                  dim3(sk::kThreads), p));
    return;
  }
  const int64_t dim = x.back();
  const int64_t rows = ir::num_elements(x) / std::max<int64_t>(dim, 1);
  const bool layer = c.step.op == OpKind::layer_norm;
  sk::RowNormParams p{c.in(0), c.y(), c.in(1),       layer ? c.in(2) : nullptr,
                      rows,    dim,   layer ? 0 : 1, eps};
  if (rows > INT32_MAX) unsupported(c.step, "more than 2^31 rows");
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_row_norm", dim3(static_cast<unsigned>(rows)),
                                dim3(row_threads(dim)), p));
}

void build_softmax(Ctx& c) {
  if (generated_norm(c)) return;
  const Shape& x = c.shape(0);
  const size_t axis =
      static_cast<size_t>(normalize_axis(c.step.attrs.get_int("axis", -1), x.size()));
  sk::SoftmaxParams p{c.in(0), c.y(), product(x, 0, axis), x[axis], product(x, axis + 1, x.size())};
  const int64_t rows = p.outer * p.inner;
  if (rows > INT32_MAX) unsupported(c.step, "more than 2^31 rows");
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_softmax", dim3(static_cast<unsigned>(rows)),
                                dim3(row_threads(p.axis)), p));
}

void build_pool(Ctx& c) {
  const bool nhwc = is_nhwc(c.step);
  const Shape& x = c.shape(0);
  const Shape& y = c.step.output_shape;
  if (c.step.op == OpKind::global_avg_pool) {
    sk::GlobalPoolParams p{
        c.in(0), c.y(), x[0], nhwc ? x[3] : x[1], nhwc ? x[1] * x[2] : x[2] * x[3], nhwc ? 1 : 0};
    c.out.push_back(simple_launch(*c.s.simple, "cuvil_global_pool", dim3(sk::grid_for(p.n * p.c)),
                                  dim3(sk::kThreads), p));
    return;
  }
  const auto kernel = c.step.attrs.get_ints("kernel", {1, 1});
  const auto stride = c.step.attrs.get_ints("stride", {1, 1});
  const auto pad = c.step.attrs.get_ints("pad", {0, 0});
  if (c.step.op == OpKind::avg_pool2d && c.step.attrs.get_int("count_include_pad", 1) == 0 &&
      (pad[0] > 0 || pad[1] > 0)) {
    unsupported(c.step, "average pooling that excludes padding from the divisor");
  }
  sk::PoolParams p{c.in(0),
                   c.y(),
                   x[0],
                   nhwc ? x[3] : x[1],
                   nhwc ? x[1] : x[2],
                   nhwc ? x[2] : x[3],
                   nhwc ? y[1] : y[2],
                   nhwc ? y[2] : y[3],
                   kernel[0],
                   kernel[1],
                   stride[0],
                   stride[1],
                   pad[0],
                   pad[1],
                   nhwc ? 1 : 0,
                   c.step.op == OpKind::max_pool2d ? 1 : 0};
  const int64_t total = ir::num_elements(y);
  c.out.push_back(
      simple_launch(*c.s.simple, "cuvil_pool", dim3(sk::grid_for(total)), dim3(sk::kThreads), p));
}

void build_upsample(Ctx& c) {
  const bool nhwc = is_nhwc(c.step);
  const Shape& x = c.shape(0);
  sk::UpsampleParams p{c.in(0),
                       c.y(),
                       x[0],
                       nhwc ? x[3] : x[1],
                       nhwc ? x[1] : x[2],
                       nhwc ? x[2] : x[3],
                       c.step.attrs.get_int("scale", 2),
                       nhwc ? 1 : 0};
  const int64_t total = ir::num_elements(c.step.output_shape);
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_upsample", dim3(sk::grid_for(total)),
                                dim3(sk::kThreads), p));
}

void strided_copy(Ctx& c, const float* src, sk::StridedCopyParams p) {
  p.src = src;
  p.dst = c.y();
  const int64_t total = p.outer * p.copy_inner;
  if (total == 0) return;
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_strided_copy", dim3(sk::grid_for(total)),
                                dim3(sk::kThreads), p));
}

void build_concat(Ctx& c) {
  const Shape& y = c.step.output_shape;
  const size_t axis =
      static_cast<size_t>(normalize_axis(c.step.attrs.get_int("axis", 0), y.size()));
  const int64_t outer = product(y, 0, axis), rest = product(y, axis + 1, y.size());
  int64_t offset = 0;
  for (size_t i = 0; i < c.own_inputs(); ++i) {
    const int64_t len = c.shape(i)[axis];
    sk::StridedCopyParams p{nullptr,    nullptr, outer,          len * rest,
                            len * rest, 0,       y[axis] * rest, offset * rest};
    strided_copy(c, c.in(i), p);
    offset += len;
  }
}

void build_slice(Ctx& c) {
  const Shape& x = c.shape(0);
  const Shape& y = c.step.output_shape;
  const size_t axis =
      static_cast<size_t>(normalize_axis(c.step.attrs.get_int("axis", 0), x.size()));
  const int64_t start = c.step.attrs.get_int("start", 0);
  const int64_t outer = product(x, 0, axis), rest = product(x, axis + 1, x.size());
  sk::StridedCopyParams p{nullptr,        nullptr,      outer,          y[axis] * rest,
                          x[axis] * rest, start * rest, y[axis] * rest, 0};
  strided_copy(c, c.in(0), p);
}

void build_transpose(Ctx& c) {
  const Shape& x = c.shape(0);
  const Shape& y = c.step.output_shape;
  const auto perm = c.step.attrs.get_ints("perm", {});
  if (y.size() > static_cast<size_t>(sk::kMaxRank) || perm.size() != x.size()) {
    unsupported(c.step, "transpose of rank above 8 or a bad perm");
  }
  sk::TransposeParams p{};
  p.x = c.in(0);
  p.y = c.y();
  p.total = ir::num_elements(y);
  p.rank = static_cast<int64_t>(y.size());
  for (size_t d = 0; d < y.size(); ++d) {
    p.out_dims[d] = y[d];
    p.in_strides[d] = product(x, static_cast<size_t>(perm[d]) + 1, x.size());
  }
  if (p.total == 0) return;
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_transpose", dim3(sk::grid_for(p.total)),
                                dim3(sk::kThreads), p));
}

void build_rope(Ctx& c) {
  const Shape& x = c.shape(0);
  if (x.size() != 4 || x[3] % 2 != 0) unsupported(c.step, "rope needs x[B, H, S, D] with even D");
  sk::RopeParams p{c.in(0),
                   c.y(),
                   x[0],
                   x[1],
                   x[2],
                   x[3],
                   c.step.attrs.get_int("pos_offset", 0),
                   c.step.attrs.get_float("theta", 10000.0)};
  const int64_t total = x[0] * x[1] * x[2] * (x[3] / 2);
  c.out.push_back(
      simple_launch(*c.s.simple, "cuvil_rope", dim3(sk::grid_for(total)), dim3(sk::kThreads), p));
}

void build_embedding(Ctx& c) {
  const Shape& table = c.shape(0);
  sk::EmbeddingParams p{c.in(0), c.in(1), c.y(), ir::num_elements(c.shape(1)), table[1], table[0]};
  const int64_t total = p.rows * p.dim;
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_embedding", dim3(sk::grid_for(total)),
                                dim3(sk::kThreads), p));
}

void build_reshape(Ctx& c) {
  const float* src = c.in(0);
  float* dst = c.y();
  const size_t bytes = static_cast<size_t>(ir::num_elements(c.step.output_shape)) * 4;
  if (src == dst || bytes == 0) return;
  c.out.push_back([src, dst, bytes](cudaStream_t stream) {
    CUVIL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  });
}

void build_epilogue(Ctx& c) {
  for (const ir::EpilogueStep& e : c.step.epilogue) {
    const sk::EwOp op = ew_op(c.step, e.op);
    if (ir::is_unary_elementwise(e.op)) {
      c.out.push_back(ew_launch(c.s, c.step, op, c.y(), c.step.output_shape, nullptr, {}, c.y(),
                                c.step.output_shape));
    } else {
      const size_t in = static_cast<size_t>(e.input);
      c.out.push_back(ew_launch(c.s, c.step, op, c.y(), c.step.output_shape, c.in(in), c.shape(in),
                                c.y(), c.step.output_shape));
    }
  }
}

}  // namespace

const void* input_pointer(const DeviceState& s, const Plan& plan, const DeviceLayout& layout,
                          const Step& step, const StepLowering& lowering, size_t input) {
  const int32_t t = step.inputs[input];
  const PlanTensor& pt = plan.tensors[static_cast<size_t>(t)];
  if (pt.storage != PlanTensor::Storage::constant) return s.tensor_f32[static_cast<size_t>(t)];
  const ConstantNeed need = constant_need(step, lowering, input);
  const ConstantSlot* slot = layout.find(t, need.type, need.form);
  CUVIL_CHECK(slot != nullptr,
              "constant '" + pt.name + "' was not laid out for node '" + step.node_name + "'");
  return s.constants.get() + slot->offset;
}

std::vector<Launch> build_step_launches(DeviceState& s, const Plan& plan,
                                        const DeviceLayout& layout, size_t index,
                                        StepLowering& lowering) {
  const Step& step = plan.steps[index];
  std::vector<Launch> out;
  if (ir::num_elements(step.output_shape) == 0) return out;
  Ctx c{s, plan, layout, step, lowering, out};
  switch (step.op) {
    case OpKind::linear:
      build_linear(c);
      break;
    case OpKind::matmul:
      build_matmul(c);
      break;
    case OpKind::conv2d:
      build_conv(c);
      break;
    case OpKind::sdpa:
      build_sdpa(c);
      break;
    case OpKind::layer_norm:
    case OpKind::rms_norm:
    case OpKind::group_norm:
    case OpKind::batch_norm:
      build_norm(c);
      break;
    case OpKind::softmax:
      build_softmax(c);
      break;
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
    case OpKind::global_avg_pool:
      build_pool(c);
      break;
    case OpKind::upsample_nearest2d:
      build_upsample(c);
      break;
    case OpKind::concat:
      build_concat(c);
      break;
    case OpKind::slice:
      build_slice(c);
      break;
    case OpKind::reshape:
      build_reshape(c);
      break;
    case OpKind::transpose:
      build_transpose(c);
      break;
    case OpKind::rope:
      build_rope(c);
      break;
    case OpKind::embedding:
      build_embedding(c);
      break;
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
      out.push_back(ew_launch(s, step, ew_op(step, step.op), c.in(0), c.shape(0), c.in(1),
                              c.shape(1), c.y(), step.output_shape));
      break;
    case OpKind::relu:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::sigmoid:
      out.push_back(ew_launch(s, step, ew_op(step, step.op), c.in(0), c.shape(0), nullptr, {},
                              c.y(), step.output_shape));
      break;
    default:
      // The ops imported models add (tanh, clip, reductions, pad, gather, ...) run on the CPU
      // target only so far.
      unsupported(step, "no CUDA kernel for this op yet (the CPU target runs it)");
  }
  build_epilogue(c);
  return out;
}

}  // namespace cuvil::runtime::cuda
