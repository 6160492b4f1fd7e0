// Implicit-GEMM convolution generator (NHWC activations): per group g, the GEMM
//   Y[m = (n, oh, ow), o] = sum_k X[n, ih, iw, g*Cg + c] * Wp[g*Og + o, k],  k = (kh, kw, c)
// with ih = oh*stride - pad + kh*dilation (zero outside the image). The A tile is gathered from X
// on the fly (never materialised); the weights are repacked once from the IR's [O, C/groups,
// KH, KW] to Wp[O, KH, KW, C/groups] (= per group an [Og, K] "b_transposed" matrix) by
// conv_weight_repack_source, which also converts them to the kernel's weight type.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cuda/codegen/epilogue.h"
#include "runtime/cuda/codegen/gemm.h"
#include "runtime/cuda/codegen/kernel_source.h"

namespace cuvil::runtime::cuda::codegen {

struct ConvProblem {
  int64_t n = 1, h = 1, w = 1, c = 1;  // input [N, H, W, C]
  int64_t o = 1, kh = 1, kw = 1;       // weights [O, C/groups, KH, KW]
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  ElemType x = ElemType::bf16, weight = ElemType::bf16;  // must match (f32 -> tf32)
  bool exact_f32 = false;  // f32 only: 3xTF32 products, as GemmProblem::exact_f32
  ElemType y = ElemType::bf16;
  bool bias = false;
  ElemType bias_type = ElemType::f32;
  // Operands address result element (row m = (n, oh, ow), column = output channel); batch is 0.
  std::vector<EpilogueStepSpec> epilogue;

  int64_t out_h() const;
  int64_t out_w() const;
};

struct ConvKernelParams {
  const void* x = nullptr;
  const void* w = nullptr;  // repacked [O, KH, KW, C/groups]
  void* y = nullptr;        // [N, OH, OW, O]
  const void* bias = nullptr;
  int64_t n = 0, h = 0, w_in = 0, c = 0, o = 0, out_h = 0, out_w = 0;
  int64_t kh = 0, kw = 0, stride_h = 0, stride_w = 0, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 0, dilation_w = 0, groups = 0;
  EpilogueOperandArg operands[kMaxEpilogueOperands];
};

// UserError for bad shapes (C or O not divisible by groups, empty output) or illegal tiles.
void validate_conv(const ConvProblem& problem, const GemmTiles& tiles);
KernelSource conv_source(const ConvProblem& problem, const GemmTiles& tiles);
LaunchGeometry conv_geometry(const ConvProblem& problem, const GemmTiles& tiles);
ConvKernelParams conv_params(const ConvProblem& problem, const void* x, const void* repacked_w,
                             void* y, const void* bias = nullptr);

// Weight repack [O, Cg, KH, KW] (type `from`) -> [O, KH, KW, Cg] (type `to`); one thread per
// element. Params: ConvRepackParams.
struct ConvRepackParams {
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t o = 0, cg = 0, kh = 0, kw = 0;
};
KernelSource conv_weight_repack_source(ElemType from, ElemType to);
LaunchGeometry conv_weight_repack_geometry(const ConvProblem& problem);

}  // namespace cuvil::runtime::cuda::codegen
