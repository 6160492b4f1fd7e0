// Prepare hooks (KernelInfo::prepare) of the GEMM-based kernels: constant weights packed once at
// lowering into the GEMM's B panel format, when the step asks for it ("gemm.prepack" = 1).
#pragma once

#include <memory>

#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

// linear: packs the constant weight [N, K] for the step's register tile and KC. Nothing for
// few-row products (they read the weight in place) or when the weight is not constant.
std::shared_ptr<const void> linear_gemm_prepare(const Step& step,
                                                const float* const* constant_inputs);

}  // namespace cuvil::runtime::cpu
