// The CPU kernels, one KernelFn per (op, variant); registered in runtime/kernel_table.cc.
// Each reads its shapes and attributes from args.step and honours args.step.epilogue.
#pragma once

#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

// conv_im2col.cc, conv_1x1.cc (more conv kernels: conv_kernels.h)
void conv2d_auto(const KernelArgs& args);    // 1x1 stride-1 as GEMM, else im2col
void conv2d_im2col(const KernelArgs& args);  // im2col + GEMM, any geometry
void conv2d_gemm_1x1(const KernelArgs& args);
bool conv2d_is_1x1(const Step& step);
// Every layout but the blocked nchw16c (which only conv2d.direct_nchw16c and .auto run).
bool conv2d_unblocked(const Step& step);
// linear_matmul.cc
void linear_gemm(const KernelArgs& args);
void matmul_gemm(const KernelArgs& args);
// attention.cc
void sdpa_blocked(const KernelArgs& args);
// norms.cc
void batch_norm(const KernelArgs& args);
void group_norm(const KernelArgs& args);
void layer_norm(const KernelArgs& args);
void rms_norm(const KernelArgs& args);
void softmax(const KernelArgs& args);
// elementwise.cc
void unary(const KernelArgs& args);
// The parameterised unary ops' constants (ir::UnaryParams), read once at lowering.
std::shared_ptr<const void> unary_prepare(const Step& step, const float* const* constants);
void binary(const KernelArgs& args);
void rope(const KernelArgs& args);
// pooling.cc
void max_pool2d(const KernelArgs& args);
void avg_pool2d(const KernelArgs& args);
void global_avg_pool(const KernelArgs& args);
void upsample_nearest2d(const KernelArgs& args);
// data_movement.cc
void concat(const KernelArgs& args);
void slice(const KernelArgs& args);
void reshape(const KernelArgs& args);
void transpose(const KernelArgs& args);
void embedding(const KernelArgs& args);
// reduce.cc
void reduce(const KernelArgs& args);
// indexing.cc
void pad(const KernelArgs& args);
void gather(const KernelArgs& args);
void expand(const KernelArgs& args);
void where(const KernelArgs& args);

}  // namespace cuvil::runtime::cpu
