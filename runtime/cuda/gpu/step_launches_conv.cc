// Launches of conv2d steps: cuDNN (algorithm chosen while building) or the generated
// implicit-GEMM convolution.
#include "runtime/cuda/gpu/step_launch_builders.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "runtime/cuda/attrs.h"
#include "runtime/cuda/codegen/conv.h"

namespace cuvil::runtime::cuda::step_launch {

using ir::OpKind;
using ir::Shape;

namespace {

cudnnDataType_t cudnn_type(StorageType t) {
  return t == StorageType::f32    ? CUDNN_DATA_FLOAT
         : t == StorageType::bf16 ? CUDNN_DATA_BFLOAT16
                                  : CUDNN_DATA_HALF;
}

}  // namespace

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
  const auto dilation = c.step.attrs.get_ints("dilation", {1, 1});
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
    p.dilation_h = dilation[0], p.dilation_w = dilation[1];
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
      static_cast<int>(stride[1]), static_cast<int>(dilation[0]), static_cast<int>(dilation[1]),
      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
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

}  // namespace cuvil::runtime::cuda::step_launch
