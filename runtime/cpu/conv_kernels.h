// Convolution kernels beyond the ones in kernels.h (conv2d.auto, .im2col, .gemm_1x1): the direct
// NHWC kernel with its weight-packing prepare hook. Registered in runtime/kernel_table.cc.
#pragma once

#include <memory>

#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

// conv_direct_nhwc.cc: register-blocked direct convolution, NHWC activations only.
void conv2d_direct_nhwc(const KernelArgs& args);
bool conv2d_direct_supports(const Step& step);
std::shared_ptr<const void> conv2d_direct_prepare(const Step& step, const float* const* constants);

}  // namespace cuvil::runtime::cpu
