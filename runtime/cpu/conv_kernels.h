// Convolution kernels beyond the ones in kernels.h (conv2d.auto, .im2col, .gemm_1x1): the direct
// NHWC and nchw16c kernels, Winograd and depthwise, with their weight-packing prepare hooks.
// Registered in runtime/kernel_table.cc.
#pragma once

#include <memory>

#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

// conv_direct_nhwc.cc: register-blocked direct convolution, NHWC activations only.
void conv2d_direct_nhwc(const KernelArgs& args);
// How conv2d.direct_nhwc runs a step on `threads` threads, resolved from its conv-tiling
// attributes and shape: what the kernel itself uses, so tests can see the knobs arrive.
struct DirectConvPlan {
  int vectors = 0;                // output-channel vectors of 16 per register tile
  int pixels_per_tile = 0;        // output pixels per full register tile
  bool tiles_span_rows = false;   // 1x1 unpadded: tiles run across output rows
  int64_t thread_parts = 1;       // > 1: threads split output channel blocks, else output rows
  int64_t channels_per_pass = 0;  // input channels summed per pass over the output
};
DirectConvPlan conv2d_direct_plan(const Step& step, int threads);
ir::Attrs conv2d_direct_pin(const Step& step, int threads);
bool conv2d_direct_supports(const Step& step);
// Geometry and conv-tiling's knobs, read once (ConvSchedule::tiling).
std::shared_ptr<const void> conv2d_direct_schedule(const Step& step);
std::shared_ptr<const void> conv2d_direct_prepare(const Step& step, const float* const* constants);

// conv_direct_nchw16c.cc: direct convolution on blocked nchw16c activations (groups 1): a
// register tile of output pixels x 16-channel output blocks, AVX-512 or a portable fallback
// (chosen with the GEMM's instruction set, active_gemm_isa()).
void conv2d_direct_nchw16c(const KernelArgs& args);
bool conv2d_direct_nchw16c_supports(const Step& step);
std::shared_ptr<const void> conv2d_direct_nchw16c_prepare(const Step& step,
                                                          const float* const* constants);

// conv_winograd_nhwc.cc: 3x3 stride-1 convolution by Winograd F(m x m, 3 x 3), NHWC, groups 1.
void conv2d_winograd_nhwc(const KernelArgs& args);
// How conv2d.winograd_nhwc runs a step on `threads` threads (from its conv-tiling attributes).
struct WinogradConvPlan {
  int tile = 0;                 // m: outputs per tile side (conv.winograd_tile)
  int vectors = 0;              // output-channel vectors of 16 per register tile
  int tiles_per_group = 0;      // most tiles per register tile (MR)
  int64_t tiles_per_block = 0;  // tiles transformed and multiplied together
  int64_t thread_parts = 1;     // > 1: threads split output channel blocks, else tiles
};
WinogradConvPlan conv2d_winograd_plan(const Step& step, int threads);
ir::Attrs conv2d_winograd_pin(const Step& step, int threads);
bool conv2d_winograd_supports(const Step& step);
// Geometry and conv-tiling's knobs, read once (ConvSchedule::tiling).
std::shared_ptr<const void> conv2d_winograd_schedule(const Step& step);
std::shared_ptr<const void> conv2d_winograd_prepare(const Step& step,
                                                    const float* const* constants);
// The same with bf16 transformed inputs and weights, fp32 accumulation (avx512_bf16): chosen by
// reduced-precision (conv_dtype: bf16) for a node select-lowering gave to Winograd.
void conv2d_winograd_bf16(const KernelArgs& args);
bool conv2d_winograd_bf16_supports(const Step& step);
std::shared_ptr<const void> conv2d_winograd_bf16_schedule(const Step& step);
std::shared_ptr<const void> conv2d_winograd_bf16_prepare(const Step& step,
                                                         const float* const* constants);

// conv_depthwise_nhwc.cc: depthwise convolution (groups == C, any channel multiplier O / C),
// NHWC: weights packed [KH][KW][O] so tiles of pixels x 16-channel vectors vectorise over
// channels (AVX-512, or a portable tile); borders without a padded copy.
void conv2d_depthwise_nhwc(const KernelArgs& args);
bool conv2d_depthwise_supports(const Step& step);
std::shared_ptr<const void> conv2d_depthwise_prepare(const Step& step,
                                                     const float* const* constants);

}  // namespace cuvil::runtime::cpu
