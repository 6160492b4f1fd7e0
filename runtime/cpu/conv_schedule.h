// What a generated convolution kernel reads of its step once at lowering (KernelInfo::schedule):
// the geometry (layout, shapes, stride, padding, groups) and, for the kernels built on the packed
// GEMM (conv2d.auto, .gemm_1x1, .im2col), the GEMM blocking. The runs read this struct, never the
// step's attributes.
#pragma once

#include <memory>

#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/gemm.h"
#include "runtime/kernel_table.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

struct ConvSchedule {
  ConvGeometry geometry;
  GemmBlocking blocking;  // the GEMM kernels' (gemm_schedule.h); defaults for the others
};

// The hook of the convolutions not built on the GEMM (direct, Winograd, depthwise): geometry
// only. (The GEMM convolutions' hook, with the blocking, is gemm_schedule.h's.)
std::shared_ptr<const void> conv2d_schedule(const Step& step);

// The geometry the step was scheduled with.
inline const ConvGeometry& scheduled_geometry(const Step& step) {
  return schedule_of<ConvSchedule>(step).geometry;
}

}  // namespace cuvil::runtime::cpu
