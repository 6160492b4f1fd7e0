// --target cuda in the harness: a compiled plan run and measured on the GPU through the same
// measure() loop as the CPU (bench_suite/measure.h), each sample timed with CUDA events.
#pragma once

#include <string>
#include <vector>

#include "bench_suite/measure.h"
#include "passes/ir/tensor.h"
#include "runtime/plan.h"

namespace cuvil::bench {

// Runs once and returns the outputs (verify).
std::vector<ir::Tensor> run_on_cuda(runtime::Plan plan, const std::vector<ir::Tensor>& inputs);

struct CudaRungInfo {
  std::string summary;          // device, memory, kernels, fallbacks, capture decisions
  double peak_bf16_gflops = 0;  // the device's measured peaks (cached per device)
  double peak_hbm_gbps = 0;
};

// Inputs copied once; every sample is one launch of the plan (CUDA Graph replay where captured),
// timed with CUDA events.
Measurement measure_on_cuda(runtime::Plan plan, const std::vector<ir::Tensor>& inputs,
                            const MeasureOptions& options, const ProgressFn& progress,
                            bool remeasure_peak, CudaRungInfo* info);

}  // namespace cuvil::bench
