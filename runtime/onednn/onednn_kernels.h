// oneDNN as a library lowering: kernels conv2d.onednn, linear.onednn and matmul.onednn. Their
// prepare hooks create the primitive (and reorder constant weights into its preferred format)
// once at lowering; the kernels only bind buffers and execute. Registered in kernel_table.cc.
#pragma once

#include <memory>

#include "runtime/plan.h"

namespace cuvil::runtime::onednn {

void conv2d(const KernelArgs& args);
std::shared_ptr<const void> conv2d_prepare(const Step& step, const float* const* constants);
void linear(const KernelArgs& args);
std::shared_ptr<const void> linear_prepare(const Step& step, const float* const* constants);
void matmul(const KernelArgs& args);
std::shared_ptr<const void> matmul_prepare(const Step& step, const float* const* constants);

}  // namespace cuvil::runtime::onednn
