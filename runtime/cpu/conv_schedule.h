// What a generated convolution kernel reads of its step once at lowering (KernelInfo::schedule):
// the geometry (layout, shapes, stride, padding, groups) and, for the kernels built on the packed
// GEMM (conv2d.auto, .gemm_1x1, .im2col), the GEMM blocking. The runs read this struct, never the
// step's attributes.
#pragma once

#include <memory>

#include "base/error.h"
#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/gemm.h"
#include "runtime/kernel_table.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

struct ConvSchedule {
  ConvGeometry geometry;
  GemmBlocking blocking;  // the GEMM kernels' (gemm_schedule.h); defaults for the others
  // The direct and Winograd kernels' own tiling (conv-tiling's knobs, a struct private to the
  // kernel's file), read by the kernel's hook; null for the others.
  std::shared_ptr<const void> tiling;
};

// The hook of the convolutions without tiling knobs (nchw16c, depthwise): geometry only. (The
// GEMM convolutions' hook, with the blocking, is gemm_schedule.h's; the direct and Winograd
// kernels' add their tiling: conv_kernels.h.)
std::shared_ptr<const void> conv2d_schedule(const Step& step);

// The geometry the step was scheduled with.
inline const ConvGeometry& scheduled_geometry(const Step& step) {
  return schedule_of<ConvSchedule>(step).geometry;
}

// The kernel's own tiling struct T, as its hook made it.
template <class T>
const T& scheduled_tiling(const Step& step) {
  const std::shared_ptr<const void>& tiling = schedule_of<ConvSchedule>(step).tiling;
  CUVIL_CHECK(tiling != nullptr, "step '" + step.node_name + "' (" + step.kernel +
                                     ") was scheduled without its tiling");
  return *static_cast<const T*>(tiling.get());
}

}  // namespace cuvil::runtime::cpu
