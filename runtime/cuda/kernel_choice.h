// Plan lowering for CUDA: which implementation (generated NVRTC kernel, cuBLAS, cuBLASLt, cuDNN,
// or a simple NVRTC kernel of kernels_simple.h) runs each step, and in which operand precision.
// Pure host logic on the Plan (tested without a GPU); the GPU executor follows it.
#pragma once

#include <string>
#include <vector>

#include "passes/ir/op.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cuda {

enum class Library : uint8_t { generated, simple, cublas, cublaslt, cudnn, copy };
std::string_view to_string(Library library);

enum class Precision : uint8_t { f32, tf32, bf16, f16 };
std::string_view to_string(Precision precision);
Precision parse_precision(const std::string& text);  // UserError on an unknown name

struct StepLowering {
  std::string kernel;  // "<op>.<implementation>" as run (after any fallback)
  Library library = Library::simple;
  Precision precision = Precision::f32;
  std::string requested;  // what the step asked for ("cuda.kernel" or the op's default)
  std::string fallback;   // why `kernel` differs from `requested`; empty when it does not
};

// The implementations registered for an op, default first ("<op>.<impl>").
std::vector<std::string> cuda_kernels_for(ir::OpKind op);
std::string default_cuda_kernel(ir::OpKind op);

// Resolves one step: its "cuda.kernel" attribute (or the op's default) and "cuda.precision".
// An unknown or mismatched kernel name is a UserError naming the node and the choices. Falls back,
// saying why, when the asked implementation cannot run the step: generated GEMMs and convs have no
// exact fp32 mode (f32 runs on the library), the generated conv needs NHWC, cuBLAS(Lt) and cuDNN
// have no tf32/bf16/f16 path for grouped convolutions beyond cuDNN's own.
StepLowering lower_step(const Step& step);
std::vector<StepLowering> lower_plan(const Plan& plan);

}  // namespace cuvil::runtime::cuda
