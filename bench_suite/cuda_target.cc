#include "bench_suite/cuda_target.h"

#include "probes/clock.h"
#include "runtime/cuda/cuda_executor.h"

namespace cuvil::bench {

std::vector<ir::Tensor> run_on_cuda(runtime::Plan plan, const std::vector<ir::Tensor>& inputs) {
  runtime::cuda::CudaExecutor executor(std::move(plan));
  return executor.run(inputs);
}

Measurement measure_on_cuda(runtime::Plan plan, const std::vector<ir::Tensor>& inputs,
                            const MeasureOptions& options, const ProgressFn& progress,
                            bool remeasure_peak, CudaRungInfo* info) {
  const runtime::cuda::DevicePeak peak = runtime::cuda::device_peak(remeasure_peak);
  runtime::cuda::CudaExecutor executor(std::move(plan));
  executor.upload_inputs(inputs);
  const Sampler sampler = [&executor] {
    const int64_t cpu0 = probes::process_cpu_ns();
    const double device_ns = executor.launch();
    return Sample{device_ns, static_cast<double>(probes::process_cpu_ns() - cpu0)};
  };
  Measurement m = measure(sampler, options, progress);
  if (info) {
    info->summary = executor.summary();
    info->peak_bf16_gflops = peak.bf16_tflops * 1e3;
    info->peak_hbm_gbps = peak.hbm_gbps;
  }
  return m;
}

}  // namespace cuvil::bench
