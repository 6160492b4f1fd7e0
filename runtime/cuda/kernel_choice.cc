#include "runtime/cuda/kernel_choice.h"

#include "base/error.h"
#include "runtime/cuda/attrs.h"

namespace cuvil::runtime::cuda {

using ir::OpKind;

std::string_view to_string(Library library) {
  switch (library) {
    case Library::generated:
      return "generated";
    case Library::simple:
      return "simple";
    case Library::cublas:
      return "cublas";
    case Library::cublaslt:
      return "cublaslt";
    case Library::cudnn:
      return "cudnn";
    case Library::copy:
      return "copy";
  }
  return "?";
}

std::string_view to_string(Precision precision) {
  switch (precision) {
    case Precision::f32:
      return "f32";
    case Precision::tf32:
      return "tf32";
    case Precision::bf16:
      return "bf16";
    case Precision::f16:
      return "f16";
  }
  return "?";
}

Precision parse_precision(const std::string& text) {
  for (Precision p : {Precision::f32, Precision::tf32, Precision::bf16, Precision::f16}) {
    if (to_string(p) == text) return p;
  }
  throw UserError("unknown CUDA precision '" + text + "' (expected f32, tf32, bf16 or f16)");
}

namespace {

std::vector<std::string> implementations(OpKind op) {
  switch (op) {
    case OpKind::conv2d:
      return {"cudnn", "generated"};
    case OpKind::linear:
    case OpKind::matmul:
      return {"cublas", "cublaslt", "generated"};
    case OpKind::sdpa:
      return {"generated", "simple"};
    case OpKind::layer_norm:
    case OpKind::rms_norm:
    case OpKind::group_norm:
    case OpKind::softmax:
      return {"generated", "simple"};
    case OpKind::reshape:
      return {"copy"};
    default:
      return {"simple"};
  }
}

Library library_of(const std::string& impl) {
  if (impl == "generated") return Library::generated;
  if (impl == "cublas") return Library::cublas;
  if (impl == "cublaslt") return Library::cublaslt;
  if (impl == "cudnn") return Library::cudnn;
  if (impl == "copy") return Library::copy;
  return Library::simple;
}

std::string op_name(OpKind op) {
  return std::string(ir::to_string(op));
}

}  // namespace

std::vector<std::string> cuda_kernels_for(OpKind op) {
  std::vector<std::string> out;
  for (const std::string& impl : implementations(op)) out.push_back(op_name(op) + "." + impl);
  return out;
}

std::string default_cuda_kernel(OpKind op) {
  return cuda_kernels_for(op).front();
}

StepLowering lower_step(const Step& step) {
  StepLowering out;
  out.requested = step.attrs.get_string(attrs::kKernel, default_cuda_kernel(step.op));
  const std::vector<std::string> known = cuda_kernels_for(step.op);
  bool found = false;
  for (const std::string& k : known) found = found || k == out.requested;
  if (!found) {
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    throw UserError("node '" + step.node_name + "' (" + op_name(step.op) +
                    "): unknown CUDA kernel '" + out.requested + "'; available: " + list);
  }
  out.precision = parse_precision(step.attrs.get_string(attrs::kPrecision, "f32"));
  out.kernel = out.requested;
  const std::string impl = out.requested.substr(out.requested.find('.') + 1);
  out.library = library_of(impl);
  auto fall_back = [&](const std::string& kernel, Library library, const std::string& why) {
    out.kernel = kernel;
    out.library = library;
    out.fallback = why;
  };
  const bool gemm_class = step.op == OpKind::linear || step.op == OpKind::matmul;
  if (gemm_class && out.library == Library::generated && out.precision == Precision::f32) {
    fall_back(op_name(step.op) + ".cublas", Library::cublas,
              "the generated GEMM has no exact fp32 mode (f32 tensor cores round to tf32): "
              "precision f32 runs on cuBLAS");
  }
  if (step.op == OpKind::conv2d && out.library == Library::generated) {
    if (step.attrs.get_string("layout", "nchw") != "nhwc") {
      fall_back("conv2d.cudnn", Library::cudnn, "the generated conv needs layout nhwc");
    } else if (out.precision == Precision::f32) {
      fall_back("conv2d.cudnn", Library::cudnn,
                "the generated conv has no exact fp32 mode: precision f32 runs on cuDNN");
    }
  }
  if (step.op == OpKind::sdpa && out.library == Library::generated &&
      step.input_shapes.size() >= 3 &&
      (step.input_shapes[0].back() > 256 || step.input_shapes[2].back() > 256)) {
    fall_back("sdpa.simple", Library::simple, "head dim above 256");
  }
  if (step.op == OpKind::softmax && out.library == Library::generated &&
      !step.input_shapes.empty()) {
    const int64_t axis = step.attrs.get_int("axis", -1);
    const int64_t rank = static_cast<int64_t>(step.input_shapes[0].size());
    if (axis != -1 && axis != rank - 1) {
      fall_back("softmax.simple", Library::simple,
                "the generated softmax reduces the last axis only");
    }
  }
  if (!gemm_class && step.op != OpKind::conv2d && out.precision != Precision::f32) {
    // Precision applies to GEMM-class nodes only; anything else computes in fp32.
    out.precision = Precision::f32;
  }
  return out;
}

std::vector<StepLowering> lower_plan(const Plan& plan) {
  std::vector<StepLowering> out;
  out.reserve(plan.steps.size());
  for (const Step& step : plan.steps) out.push_back(lower_step(step));
  return out;
}

}  // namespace cuvil::runtime::cuda
