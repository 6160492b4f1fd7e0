// Schedule hooks (KernelInfo::schedule) of the kernels built on the packed GEMM: linear.gemm,
// matmul.gemm and the convolutions that lower to it (conv2d.auto, .gemm_1x1, .im2col). Each reads
// the gemm-tiling attributes once at lowering into a GemmBlocking; the runs read that struct.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/cpu/gemm.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

// A step whose every product has few rows (gemm_reads_in_place) reads no attribute: its products
// take the path that ignores blocking, so its knobs reach nothing (Step::reach). Linear and
// matmul schedule a GemmBlocking; conv2d a ConvSchedule (conv_schedule.h).
std::shared_ptr<const void> linear_gemm_schedule(const Step& step);
std::shared_ptr<const void> matmul_gemm_schedule(const Step& step);
std::shared_ptr<const void> conv2d_gemm_schedule(const Step& step);

// The blocking a product of m rows of this step runs with: the schedule's, or the defaults where
// the product reads B in place. The step must have been scheduled (runtime::schedule_step).
GemmBlocking scheduled_blocking(const Step& step, int64_t m);

}  // namespace cuvil::runtime::cpu
