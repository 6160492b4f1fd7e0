// Marks GPU work with the op that launched it: the CUDA runtime calls push_op_region(step) before
// launching an op's kernels and copies and pop_op_region() after. While a GpuActivityTracer runs,
// CUPTI ties every launch in between to `step` (an external correlation id); otherwise both are
// one relaxed atomic load. Plain declarations: callers need no CUPTI headers. Defined only in
// builds with the CUDA toolkit (CUVIL_HAVE_CUPTI).
#pragma once

#include <cstdint>

namespace cuvil::probes::cupti {

void push_op_region(uint64_t step_index);
void pop_op_region();
// Whether a tracer is recording (a caller may skip work only tracing needs).
bool op_regions_active();

}  // namespace cuvil::probes::cupti
