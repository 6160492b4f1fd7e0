#include "passes/reduced_precision.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "base/error.h"
#include "passes/target_cpu.h"
#include "runtime/cpu/attention.h"
#include "runtime/cpu/conv_bf16_direct.h"
#include "runtime/cpu/conv_geometry.h"
#include "runtime/kernel_table.h"

namespace cuvil::passes {

namespace {

// A notice about what the target's CPU makes of the pipeline, on stderr once per process: the
// pass runs once per compile, and `run` compiles every rung (and a probe or a Python session may
// compile again) where the answer is the same each time.
void notice_once(const std::string& text) {
  static std::mutex mutex;
  static std::set<std::string> printed;
  const std::lock_guard<std::mutex> lock(mutex);
  if (printed.insert(text).second) std::fprintf(stderr, "%s\n", text.c_str());
}

using ir::Graph;
using ir::Node;
using ir::OpKind;

ParamSpec dtype_param(const std::string& name, std::vector<std::string> choices,
                      const std::string& what) {
  return choice_param(name, std::move(choices), "f32", what);
}

const char* isa_name(const std::string& dtype) {
  return dtype == "bf16" ? "avx512_bf16" : "avx512_vnni";
}

// Whether the target runs bf16 products on VDPBF16PS (else, on an AVX-512 CPU, on the bf16
// weights widened to fp32 in registers: gemm_bf16.h).
bool bf16_native(const Graph& graph) {
  return target_cpu_has(graph, "avx512_bf16");
}

// From the plan's target CPU (passes/target_cpu.h), not from the host running the compiler.
bool isa_available(const Graph& graph, const std::string& dtype) {
  if (dtype == "bf16" && target_cpu_has(graph, "avx512")) return true;
  return dtype == "f32" || target_cpu_has(graph, isa_name(dtype));
}

// Why `n` cannot run in `dtype` (empty when it can). Kernels' own supports() checks the same at
// lowering; here the node simply stays f32.
std::string unsupported_reason(const Graph& g, const Node& n, const std::string& dtype) {
  if (n.op == OpKind::conv2d) {
    if (n.attrs.get_string("layout", "nchw") != "nhwc") return "needs layout nhwc";
    if (n.attrs.get_int("groups", 1) != 1) return "needs groups = 1";
    if (!runtime::cpu::has_unit_dilation(n.attrs)) return "needs dilation 1";
  }
  if ((n.op == OpKind::conv2d || n.op == OpKind::linear) && !g.is_constant(n.inputs[1])) {
    return "weights are not constant";
  }
  // Widened to fp32, a bf16 product saves only the bytes of constant weights; both operands of
  // a matmul or an attention are activations, which it would round and convert per call for
  // nothing (and flash attention has no widened tiles).
  if ((n.op == OpKind::sdpa || n.op == OpKind::matmul) && dtype == "bf16" && !bf16_native(g)) {
    return std::string(n.op == OpKind::sdpa ? "flash attention" : "a matmul of activations") +
           " in bf16 needs avx512_bf16 (the widened tiles serve weight products)";
  }
  if (n.op == OpKind::sdpa) {
    // As sdpa.auto decides: decode-like shapes run the blocked f32 kernel, since packing every
    // key for a handful of query rows costs more than the products.
    const ir::Shape& q = g.value(n.inputs[0]).shape;
    const ir::Shape& k = g.value(n.inputs[1]).shape;
    if (!runtime::cpu::flash_pays(q[1] / k[1] * q[2])) {
      return "at most " + std::to_string(runtime::cpu::kFlashMinRowsExclusive) +
             " query rows per kv head (decode): the blocked f32 kernel";
    }
  }
  return "";
}

// Whether `n` runs on conv2d.bf16's direct path, which converts the input once into a bordered
// copy instead of converting A per product: `min_k` (the conversion's cost against the products'
// saving) does not apply to it. VGG-11's first layer (3 channels, 3x3, K = 27) took 610 us in
// the fp32 direct kernel and 397 us on the bf16 direct path (docs/performance.md).
bool runs_bf16_direct(const Graph& g, const Node& n, const std::string& dtype, bool variant) {
  if (dtype != "bf16" || n.op != OpKind::conv2d || variant || !bf16_native(g)) return false;
  const ir::Shape& w = g.value(n.inputs[1]).shape;  // [o, c per group, kh, kw]
  const std::vector<int64_t> stride = n.attrs.get_ints("stride", {1, 1});
  return stride.size() == 2 &&
         runtime::cpu::bf16_conv_runs_direct(w[1], w[2], w[3], stride[0], stride[1]);
}

// A bf16 convolution without a bf16 variant of its kernel runs im2col + GEMM, whose gather is
// slow for few channels: ResNet-50's stem (3 channels, 7x7) took 2.2 ms in bf16 against 0.84 ms
// in the fp32 direct kernel (cuvil-micro-conv stem_7x7s2, 2 threads). So such convolutions with
// fewer input channels than this stay f32, unless conv2d.bf16 runs them direct
// (bf16_conv_runs_direct: any but 1x1 stride-1 products and very wide kernel rows).
constexpr int64_t kMinBf16ImcolChannels = 16;

// Why `n` stays f32 although it could run in `dtype` (empty when reduced precision pays);
// `direct`: runs_bf16_direct(n).
std::string slower_reason(const Graph& g, const Node& n, const std::string& dtype, bool variant,
                          bool direct) {
  if (dtype != "bf16" || n.op != OpKind::conv2d || variant || direct) return "";
  const ir::Shape& w = g.value(n.inputs[1]).shape;  // [o, c per group, kh, kw]
  if (w[1] >= kMinBf16ImcolChannels) return "";
  return "fewer than " + std::to_string(kMinBf16ImcolChannels) +
         " input channels in a 1x1 stride-1 product or a kernel row of more than " +
         std::to_string(2 * runtime::cpu::kBf16DirectMaxRowPairs) +
         " elements: the bf16 GEMM is slower than the f32 kernel";
}

int64_t reduction_depth(const Graph& g, const Node& n) {
  const ir::Shape& w = g.value(n.inputs[1]).shape;
  switch (n.op) {
    case OpKind::linear:
      return w[1];
    case OpKind::conv2d:
      return w[1] * w[2] * w[3];
    default:
      return g.value(n.inputs[0]).shape.back();  // matmul: A's last dim; sdpa: the head dim
  }
}

}  // namespace

std::vector<ParamSpec> ReducedPrecisionPass::params() const {
  std::vector<ParamSpec> p;
  p.push_back(dtype_param(
      "linear_dtype", {"f32", "bf16", "int8"},
      "linear layers: bf16 (weights bf16, fp32 accumulation; stated bound 1e-1 max relative "
      "error vs fp32) or int8 (per-channel int8 weights, per-tensor u8 activations; bound "
      "5e-2)"));
  p.push_back(dtype_param("conv_dtype", {"f32", "bf16", "int8"},
                          "conv2d (NHWC, groups = 1; others stay f32): bf16 (bound 1e-1) or int8 "
                          "(bound 5e-2 on ResNet-50; larger on transformer blocks)"));
  p.push_back(dtype_param("matmul_dtype", {"f32", "bf16"},
                          "activation x activation matmul: both operands converted to bf16 per "
                          "call (bound 1e-1)"));
  p.push_back(dtype_param("attention_dtype", {"f32", "bf16"},
                          "scaled dot-product attention (sdpa, flash): Q K^T and P V in bf16 "
                          "with an fp32 softmax and accumulators (bound 1e-1); decode-like "
                          "shapes stay f32"));
  p.push_back(int_param("min_k", 1, 65536, 32,
                        "products with a reduction depth K below this stay f32 (conversion "
                        "would cost more than it saves); not convolutions on conv2d.bf16's "
                        "direct path, which convert their input once",
                        Scale::log));
  return p;
}

void ReducedPrecisionPass::run(Graph& graph, const ParamMap& params) const {
  const int64_t min_k = param_int(params, "min_k");
  auto dtype_for = [&](OpKind op) -> std::string {
    switch (op) {
      case OpKind::linear:
        return param_choice(params, "linear_dtype");
      case OpKind::conv2d:
        return param_choice(params, "conv_dtype");
      case OpKind::matmul:
        return param_choice(params, "matmul_dtype");
      case OpKind::sdpa:
        return param_choice(params, "attention_dtype");
      default:
        return "f32";
    }
  };
  std::set<ir::ValueId> bf16_weights, f32_weight_users;
  for (Node& n : graph.mutable_nodes()) {
    const std::string dtype = dtype_for(n.op);
    if (dtype == "f32") {
      if (n.inputs.size() > 1) f32_weight_users.insert(n.inputs[1]);
      continue;
    }
    if (!isa_available(graph, dtype)) {
      // Documented fallback: a CPU without the instructions runs f32, with one warning.
      notice_once("reduced-precision: " + target_cpu_description(graph) + " lacks " +
                  isa_name(dtype) + "; " + dtype + " nodes stay f32 (accuracy bound remains the " +
                  dtype + " one)");
      n.attrs.set("precision", std::string("f32"));
      n.attrs.set("precision.fallback", std::string("target cpu lacks ") + isa_name(dtype));
      f32_weight_users.insert(n.inputs[1]);
      continue;
    }
    // A kernel with a bf16 variant keeps its algorithm (Winograd: 2.2-2.6x the bf16 im2col/GEMM
    // kernel on ResNet-50's 3x3 layers, cuvil-micro-conv).
    const runtime::KernelInfo* lowered = runtime::find_kernel(n.op, n.attrs.get_string("impl", ""));
    const bool variant = dtype == "bf16" && lowered && !lowered->bf16_variant.empty();
    if (variant && !bf16_native(graph)) {
      // The variants run on VDPBF16PS only, and the widened GEMM is no substitute: ResNet-50's
      // 3x3 layers took 25-28 ms on it against 17-18 ms in f32 Winograd (docs/performance.md).
      n.attrs.set("precision", std::string("f32"));
      n.attrs.set("precision.fallback",
                  "its bf16 variant " + lowered->bf16_variant + " needs avx512_bf16");
      f32_weight_users.insert(n.inputs[1]);
      continue;
    }
    const bool direct = runs_bf16_direct(graph, n, dtype, variant);
    const std::string reason = unsupported_reason(graph, n, dtype);
    if (!reason.empty() || (!direct && reduction_depth(graph, n) < min_k)) {
      n.attrs.set("precision", std::string("f32"));
      n.attrs.set("precision.fallback", reason.empty() ? std::string("K below min_k") : reason);
      f32_weight_users.insert(n.inputs[1]);
      continue;
    }
    if (const std::string slower = slower_reason(graph, n, dtype, variant, direct);
        !slower.empty()) {
      n.attrs.set("precision", std::string("f32"));
      n.attrs.set("precision.fallback", slower);
      f32_weight_users.insert(n.inputs[1]);
      continue;
    }
    if (dtype == "bf16" && !bf16_native(graph)) {
      notice_once("reduced-precision: " + target_cpu_description(graph) +
                  " lacks avx512_bf16; bf16 weight products run on AVX-512 with the weights "
                  "widened to fp32 in registers (activations stay fp32), bf16 attention and "
                  "matmuls stay f32");
    }
    const char* dtype_param = n.op == OpKind::linear   ? "linear_dtype"
                              : n.op == OpKind::conv2d ? "conv_dtype"
                              : n.op == OpKind::sdpa   ? "attention_dtype"
                                                       : "matmul_dtype";
    // The kernel table names the kernel: the lowered one's bf16 twin, or the op's kernel of
    // that precision.
    const runtime::KernelInfo* reduced = variant ? runtime::find_kernel(n.op, lowered->bf16_variant)
                                                 : runtime::find_precision_kernel(n.op, dtype);
    CUVIL_CHECK(reduced, "reduced-precision: no " + std::string(ir::to_string(n.op)) +
                             " kernel in " + dtype + " is registered");
    n.attrs.set("impl", reduced->name,
                "reduced-precision." + std::string(dtype_param) +
                    (direct ? "" : ",reduced-precision.min_k"));
    n.attrs.set("precision", dtype);
    graph.annotations["reduced-precision." + dtype] += 1;
    // Only linear and conv2d read a weight (input 1); matmul and sdpa read activations.
    if (dtype == "bf16" && (n.op == OpKind::linear || n.op == OpKind::conv2d)) {
      bf16_weights.insert(n.inputs[1]);
    } else if (n.inputs.size() > 1) {
      f32_weight_users.insert(n.inputs[1]);
    }
  }
  // A weight every user reads as bf16 is bf16 data (what the kernels move); int8 has no dtype
  // in the IR, so those weights keep f32 and the node's "precision" says what it computes.
  for (ir::ValueId w : bf16_weights) {
    if (!f32_weight_users.count(w)) graph.mutable_value(w).dtype = ir::DType::bf16;
  }
}

double precision_tolerance(const PipelineConfig& config, std::string* label) {
  double bound = kFp32Tolerance;
  std::string name = "f32";
  for (const PassInvocation& p : config.passes) {
    const bool cuda = p.name == "cuda-precision";
    if (p.name != "reduced-precision" && !cuda) continue;
    for (const auto& [key, value] : p.params) {
      const auto* text = std::get_if<std::string>(&value);
      if (!text) continue;
      // GPU tf32 and f16 round operands to 10-bit mantissas: held to the bf16 bound.
      if (cuda && (*text == "tf32" || *text == "f16") && bound < kBf16Tolerance) {
        bound = kBf16Tolerance, name = *text;
      }
      if (*text == "int8" && bound < kInt8Tolerance) bound = kInt8Tolerance, name = "int8";
      if (*text == "bf16" && bound < kBf16Tolerance) bound = kBf16Tolerance, name = "bf16";
    }
  }
  if (label) *label = name;
  return bound;
}

}  // namespace cuvil::passes
