// Reduced-precision kernels registered in runtime/kernel_table.cc: bf16 (AVX512_BF16, or any
// AVX-512 CPU with the weights widened to fp32: gemm_bf16.h) and int8 (AVX512_VNNI) linear,
// matmul and conv2d. Their prepare functions convert constant weights
// once at lowering (Step::prepared); supports() says no on a CPU without the instructions, and
// for convolutions outside what they handle (NHWC, groups = 1).
#pragma once

#include <memory>

#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

// gemm_bf16_kernels.cc
void linear_bf16(const KernelArgs& args);
void matmul_bf16(const KernelArgs& args);
void conv2d_bf16(const KernelArgs& args);
bool bf16_supported(const Step& step);
bool conv2d_bf16_supported(const Step& step);
std::shared_ptr<const void> prepare_linear_bf16(const Step& step, const float* const* constants);
std::shared_ptr<const void> prepare_conv2d_bf16(const Step& step, const float* const* constants);

// gemm_int8_kernels.cc
void linear_int8(const KernelArgs& args);
void conv2d_int8(const KernelArgs& args);
bool linear_int8_supported(const Step& step);
bool conv2d_int8_supported(const Step& step);
std::shared_ptr<const void> prepare_linear_int8(const Step& step, const float* const* constants);
std::shared_ptr<const void> prepare_conv2d_int8(const Step& step, const float* const* constants);

}  // namespace cuvil::runtime::cpu
