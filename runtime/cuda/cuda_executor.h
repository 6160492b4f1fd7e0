// Runs a Plan on a CUDA device (--target cuda): every constant uploaded once in the forms its
// steps read (bf16/f16 copies where cuda-precision says so, conv weights repacked for NHWC), the
// activations in one device arena laid out by the Plan's memory plan, each step launched on one
// stream as the kernel or library call runtime/cuda/kernel_choice.h chose, and the steps captured
// into CUDA Graphs as the cuda-graph pass asked (runtime/cuda/capture_plan.h). Host header: no
// CUDA headers. Without a usable device the constructor throws UserError saying why.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "passes/ir/tensor.h"
#include "runtime/cuda/capture_plan.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/kernel_choice.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cuda {

class CudaExecutor {
 public:
  explicit CudaExecutor(Plan plan, int device = 0);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  // Copies inputs in, runs the plan, waits, copies the outputs out (graph order). Inputs of the
  // wrong shape throw UserError.
  std::vector<ir::Tensor> run(const std::vector<ir::Tensor>& inputs);

  // The measured loop's pieces: inputs copied once, then each launch() runs the plan on the
  // device (graphs where captured, capturing on the first call after one eager run), waits, and
  // returns its CUDA-event time in ns.
  void upload_inputs(const std::vector<ir::Tensor>& inputs);
  double launch();
  std::vector<ir::Tensor> download_outputs();
  // One eager (uncaptured) run with a CUDA event between consecutive steps: ns per step.
  std::vector<double> step_times_ns();
  // One eager run traced by CUPTI (probes/cupti): each step's GPU busy time in ns (the union of
  // its kernels' and copies' intervals). UserError with CUPTI's reason when it cannot trace.
  std::vector<double> cupti_step_busy_ns();

  const Plan& plan() const;
  const std::vector<StepLowering>& lowering() const;
  const DeviceLayout& layout() const;
  const DeviceInfo& device() const;
  // Decided at construction; a segment whose capture fails on the first launch() is demoted to
  // stream launches with the CUDA error as its reason.
  const std::vector<CaptureSegment>& capture_segments() const;
  // Device memory, lowering fallbacks and capture decisions, for logs.
  std::string summary() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Measured once per device and cached like probes/machine_peak: bf16 tensor-core GEMM throughput
// (cuBLAS, 8192^3) and HBM bandwidth (device-to-device copies, read + write bytes).
struct DevicePeak {
  std::string device;
  double bf16_tflops = 0;
  double hbm_gbps = 0;
  std::string measured_at;
  bool from_cache = false;
};
DevicePeak device_peak(bool remeasure = false);

}  // namespace cuvil::runtime::cuda
