// The CPU kernels, one KernelFn per (op, variant); registered in runtime/kernel_table.cc.
// Each reads its shapes and attributes from args.step and honours args.step.epilogue.
#pragma once

#include <memory>

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
// attention.cc (its schedule hook: attention.h)
void sdpa_blocked(const KernelArgs& args);
// norms.cc; their schedule hook reads eps, groups, axis and the layout once
std::shared_ptr<const void> norm_schedule(const Step& step);
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
std::shared_ptr<const void> cast_schedule(const Step& step);  // the target dtype
void cast(const KernelArgs& args);
void rope(const KernelArgs& args);
std::shared_ptr<const void> rope_schedule(const Step& step);  // offset, frequencies
// pooling.cc; their schedule hook reads the window, stride, padding, scale and layout once
std::shared_ptr<const void> pool_schedule(const Step& step);
void max_pool2d(const KernelArgs& args);
void avg_pool2d(const KernelArgs& args);
void global_avg_pool(const KernelArgs& args);
void upsample_nearest2d(const KernelArgs& args);
// data_movement.cc; concat's and slice's axis, slice's start, transpose's perm read once
std::shared_ptr<const void> copy_schedule(const Step& step);
void concat(const KernelArgs& args);
void slice(const KernelArgs& args);
void reshape(const KernelArgs& args);
void transpose(const KernelArgs& args);
void embedding(const KernelArgs& args);
// reduce.cc; the reduced axes read once
std::shared_ptr<const void> reduce_schedule(const Step& step);
void reduce(const KernelArgs& args);
// reduce.cc, too; cumsum's axis and direction read once
std::shared_ptr<const void> cumsum_schedule(const Step& step);
void cumsum(const KernelArgs& args);
// indexing.cc; pad's pads, mode and value, gather's and scatter's axis, scatter's reduction and
// compare's mode read once
std::shared_ptr<const void> indexing_schedule(const Step& step);
void pad(const KernelArgs& args);
void gather(const KernelArgs& args);
void scatter(const KernelArgs& args);
void expand(const KernelArgs& args);
void where(const KernelArgs& args);
void compare(const KernelArgs& args);

}  // namespace cuvil::runtime::cpu
