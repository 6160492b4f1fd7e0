#include "runtime/kernel_table.h"

#include <utility>

#include "base/error.h"
#include "runtime/cpu/attention.h"
#include "runtime/cpu/conv_kernels.h"
#include "runtime/cpu/conv_schedule.h"
#include "runtime/cpu/gemm_bf16_kernels.h"
#include "runtime/cpu/gemm_prepare.h"
#include "runtime/cpu/gemm_schedule.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/lowp_gemm_schedule.h"
#include "runtime/onednn/onednn_kernels.h"

namespace cuvil::runtime {

namespace {

using ir::OpKind;

std::vector<KernelInfo> build_table() {
  std::vector<KernelInfo> t;
  auto add = [&t](OpKind op, const char* variant, KernelFn fn, const char* what,
                  bool (*supports)(const Step&) = nullptr) {
    KernelInfo k;
    k.op = op;
    k.name = std::string(ir::to_string(op)) + "." + variant;
    k.fn = fn;
    k.supports = supports;
    k.description = what;
    t.push_back(std::move(k));
  };
  add(OpKind::conv2d, "auto", cpu::conv2d_auto,
      "1x1 stride-1 as GEMM, otherwise im2col + GEMM; nchw16c: direct_nchw16c");
  t.back().schedule = cpu::conv2d_gemm_schedule;
  add(OpKind::conv2d, "im2col", cpu::conv2d_im2col, "im2col (blocked) + packed GEMM",
      cpu::conv2d_unblocked);
  t.back().choice = "im2col";
  t.back().schedule = cpu::conv2d_gemm_schedule;
  add(OpKind::conv2d, "gemm_1x1", cpu::conv2d_gemm_1x1, "1x1 stride-1 unpadded as one GEMM",
      cpu::conv2d_is_1x1);
  t.back().choice = "gemm";
  t.back().schedule = cpu::conv2d_gemm_schedule;
  add(OpKind::conv2d, "direct_nhwc", cpu::conv2d_direct_nhwc,
      "direct, NHWC only: MR pixels x NV*16 channels register tile, packed weights",
      cpu::conv2d_direct_supports);
  t.back().choice = "direct";
  t.back().schedule = cpu::conv2d_direct_schedule;
  t.back().prepare = cpu::conv2d_direct_prepare;
  t.back().replaced_inputs = 1u << 1;
  t.back().pin = cpu::conv2d_direct_pin;
  add(OpKind::conv2d, "winograd_nhwc", cpu::conv2d_winograd_nhwc,
      "3x3 stride-1, NHWC groups=1: Winograd F(2x2 or 4x4, 3x3), weights transformed once",
      cpu::conv2d_winograd_supports);
  t.back().choice = "winograd";
  t.back().schedule = cpu::conv2d_winograd_schedule;
  t.back().prepare = cpu::conv2d_winograd_prepare;
  t.back().replaced_inputs = 1u << 1;
  t.back().bf16_variant = "conv2d.winograd_bf16";
  t.back().pin = cpu::conv2d_winograd_pin;
  add(OpKind::conv2d, "winograd_bf16", cpu::conv2d_winograd_bf16,
      "Winograd F(2x2, 3x3) as winograd_nhwc, bf16 transformed inputs and weights "
      "(avx512_bf16)",
      cpu::conv2d_winograd_bf16_supports);
  t.back().schedule = cpu::conv2d_winograd_bf16_schedule;
  t.back().prepare = cpu::conv2d_winograd_bf16_prepare;
  t.back().replaced_inputs = 1u << 1;
  add(OpKind::conv2d, "direct_nchw16c", cpu::conv2d_direct_nchw16c,
      "direct, nchw16c groups=1 only: MR pixels x NV 16-channel blocks register tile, packed "
      "weights",
      cpu::conv2d_direct_nchw16c_supports);
  t.back().choice = "direct";
  t.back().blocked = true;
  t.back().schedule = cpu::conv2d_schedule;
  t.back().prepare = cpu::conv2d_direct_nchw16c_prepare;
  t.back().replaced_inputs = 1u << 1;
  add(OpKind::conv2d, "depthwise_nhwc", cpu::conv2d_depthwise_nhwc,
      "depthwise (groups = C), NHWC only: MR pixels x NV*16 channels register tile over "
      "channel-innermost packed weights, borders unpadded",
      cpu::conv2d_depthwise_supports);
  t.back().choice = "depthwise";
  t.back().schedule = cpu::conv2d_schedule;
  t.back().prepare = cpu::conv2d_depthwise_prepare;
  t.back().replaced_inputs = 1u << 1;
  add(OpKind::conv2d, "onednn", onednn::conv2d, "oneDNN convolution primitive (library)",
      cpu::conv2d_unblocked);
  t.back().choice = "onednn";
  t.back().prepare = onednn::conv2d_prepare;
  // Reduced precision (passes/reduced_precision.cc picks them): weights converted once in prepare.
  add(OpKind::conv2d, "bf16", cpu::conv2d_bf16,
      "NHWC groups=1: bf16 weights, 1x1 as GEMM, few channels direct (avx512_bf16), others "
      "im2col (avx512_bf16, or avx512 with the weights widened to fp32)",
      cpu::conv2d_bf16_supported);
  t.back().precision = "bf16";
  t.back().schedule = cpu::bf16_gemm_schedule;
  t.back().prepare = cpu::prepare_conv2d_bf16;
  t.back().replaced_inputs = 1u << 1;
  add(OpKind::conv2d, "int8", cpu::conv2d_int8,
      "NHWC groups=1: int8 per-channel weights, u8 per-tensor activations (avx512_vnni)",
      cpu::conv2d_int8_supported);
  t.back().precision = "int8";
  t.back().schedule = cpu::int8_gemm_schedule;
  t.back().prepare = cpu::prepare_conv2d_int8;
  t.back().replaced_inputs = 1u << 1;
  add(OpKind::linear, "gemm", cpu::linear_gemm, "packed GEMM with B transposed");
  t.back().choice = "gemm";
  t.back().schedule = cpu::linear_gemm_schedule;
  t.back().prepare = cpu::linear_gemm_prepare;  // packs a constant weight (gemm.prepack)
  t.back().replaced_inputs = 1u << 1;
  add(OpKind::linear, "onednn", onednn::linear, "oneDNN matmul primitive (library)");
  t.back().choice = "onednn";
  t.back().prepare = onednn::linear_prepare;
  add(OpKind::matmul, "gemm", cpu::matmul_gemm, "batched packed GEMM");
  t.back().choice = "gemm";
  t.back().schedule = cpu::matmul_gemm_schedule;
  add(OpKind::linear, "bf16", cpu::linear_bf16,
      "bf16 weights packed in K pairs, fp32 accumulation (avx512_bf16, or avx512 widened)",
      cpu::bf16_supported);
  t.back().precision = "bf16";
  t.back().schedule = cpu::bf16_gemm_schedule;
  t.back().prepare = cpu::prepare_linear_bf16;
  t.back().replaced_inputs = 1u << 1;
  add(OpKind::linear, "int8", cpu::linear_int8,
      "int8 per-channel weights, u8 per-tensor activations (avx512_vnni)",
      cpu::linear_int8_supported);
  t.back().precision = "int8";
  t.back().schedule = cpu::int8_gemm_schedule;
  t.back().prepare = cpu::prepare_linear_int8;
  t.back().replaced_inputs = 1u << 1;
  add(OpKind::matmul, "bf16", cpu::matmul_bf16,
      "both operands converted to bf16 per call (avx512_bf16, or avx512 widened: B only)",
      cpu::bf16_supported);
  t.back().precision = "bf16";
  t.back().schedule = cpu::bf16_gemm_schedule;
  add(OpKind::matmul, "onednn", onednn::matmul, "oneDNN matmul primitive (library)");
  t.back().choice = "onednn";
  t.back().prepare = onednn::matmul_prepare;
  add(OpKind::batch_norm, "cpu", cpu::batch_norm, "per-channel affine");
  t.back().schedule = cpu::norm_schedule;
  add(OpKind::group_norm, "cpu", cpu::group_norm, "two-pass, fp64 statistics");
  t.back().schedule = cpu::norm_schedule;
  add(OpKind::layer_norm, "cpu", cpu::layer_norm, "two-pass, fp64 statistics");
  t.back().schedule = cpu::norm_schedule;
  add(OpKind::rms_norm, "cpu", cpu::rms_norm, "fp64 statistics");
  t.back().schedule = cpu::norm_schedule;
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div}) {
    add(op, "cpu", cpu::binary, "broadcasting elementwise");
  }
  for (OpKind op : {OpKind::relu, OpKind::silu, OpKind::gelu, OpKind::sigmoid}) {
    add(op, "cpu", cpu::unary, "vectorised elementwise");
  }
  add(OpKind::softmax, "cpu", cpu::softmax, "max-subtracted, any axis");
  t.back().schedule = cpu::norm_schedule;
  add(OpKind::sdpa, "auto", cpu::sdpa_auto,
      "flash, or blocked when a kv head has <= 16 query rows");
  t.back().schedule = cpu::sdpa_auto_schedule;
  add(OpKind::sdpa, "flash", cpu::sdpa_flash,
      "query tiles x key tiles, online softmax, packed K^T panels");
  t.back().schedule = cpu::sdpa_flash_schedule;
  add(OpKind::sdpa, "flash_bf16", cpu::sdpa_flash_bf16,
      "flash with Q K^T and P V in bf16, fp32 softmax and accumulators (avx512_bf16)",
      cpu::bf16_supported);
  t.back().precision = "bf16";
  t.back().schedule = cpu::sdpa_flash_schedule;
  add(OpKind::sdpa, "blocked", cpu::sdpa_blocked,
      "query blocks x all keys per (batch, kv head): GEMM, softmax, GEMM");
  t.back().schedule = cpu::sdpa_blocked_schedule;
  add(OpKind::rope, "cpu", cpu::rope, "rotate-half, angles per position");
  t.back().schedule = cpu::rope_schedule;
  add(OpKind::max_pool2d, "cpu", cpu::max_pool2d, "direct");
  t.back().schedule = cpu::pool_schedule;
  add(OpKind::avg_pool2d, "cpu", cpu::avg_pool2d, "direct, count_include_pad 0 or 1");
  t.back().schedule = cpu::pool_schedule;
  add(OpKind::global_avg_pool, "cpu", cpu::global_avg_pool, "fp64 sums");
  t.back().schedule = cpu::pool_schedule;
  add(OpKind::upsample_nearest2d, "cpu", cpu::upsample_nearest2d, "direct");
  t.back().schedule = cpu::pool_schedule;
  add(OpKind::concat, "cpu", cpu::concat, "block copies");
  t.back().schedule = cpu::copy_schedule;
  add(OpKind::slice, "cpu", cpu::slice, "block copies");
  t.back().schedule = cpu::copy_schedule;
  add(OpKind::reshape, "cpu", cpu::reshape, "copy");
  add(OpKind::transpose, "cpu", cpu::transpose, "blocked 2-D for layout perms, else strided");
  t.back().schedule = cpu::copy_schedule;
  add(OpKind::embedding, "cpu", cpu::embedding, "row gather");
  for (OpKind op :
       {OpKind::tanh,       OpKind::erf,  OpKind::sqrt, OpKind::exp,          OpKind::log,
        OpKind::neg,        OpKind::abs,  OpKind::clip, OpKind::hard_sigmoid, OpKind::hard_swish,
        OpKind::leaky_relu, OpKind::sin,  OpKind::cos,  OpKind::floor,        OpKind::ceil,
        OpKind::round,      OpKind::sign, OpKind::tan,  OpKind::asin,         OpKind::acos,
        OpKind::atan,       OpKind::sinh, OpKind::cosh, OpKind::asinh,        OpKind::acosh,
        OpKind::atanh}) {
    add(op, "cpu", cpu::unary, "elementwise (vectorised: tanh, erf, sqrt, exp)");
    t.back().prepare = cpu::unary_prepare;
  }
  for (OpKind op : {OpKind::pow, OpKind::max, OpKind::min}) {
    add(op, "cpu", cpu::binary, "broadcasting elementwise");
  }
  for (OpKind op : {OpKind::reduce_mean, OpKind::reduce_sum, OpKind::reduce_max}) {
    add(op, "cpu", cpu::reduce,
        "adjacent axes as [outer, reduced, inner] with contiguous rows, fp64 sums");
    t.back().schedule = cpu::reduce_schedule;
  }
  add(OpKind::pad, "cpu", cpu::pad, "row copies with constant, edge or reflect borders");
  t.back().schedule = cpu::indexing_schedule;
  add(OpKind::gather, "cpu", cpu::gather, "slab copies along the axis");
  t.back().schedule = cpu::indexing_schedule;
  add(OpKind::scatter, "cpu", cpu::scatter, "data copied, then updates in index order per slab");
  t.back().schedule = cpu::indexing_schedule;
  add(OpKind::where, "cpu", cpu::where, "broadcasting select");
  add(OpKind::compare, "cpu", cpu::compare, "broadcasting comparison, 0 or 1");
  t.back().schedule = cpu::indexing_schedule;
  add(OpKind::cumsum, "cpu", cpu::cumsum, "running sums along an axis, fp64");
  t.back().schedule = cpu::cumsum_schedule;
  add(OpKind::expand, "cpu", cpu::expand, "broadcast runs");
  add(OpKind::cast, "cpu", cpu::cast, "to i32: toward zero, saturated; to f32: copy");
  t.back().schedule = cpu::cast_schedule;
  return t;
}

}  // namespace

const std::vector<KernelInfo>& kernel_table() {
  static const std::vector<KernelInfo> table = build_table();
  return table;
}

std::vector<const KernelInfo*> kernels_for(ir::OpKind op) {
  std::vector<const KernelInfo*> out;
  for (const KernelInfo& k : kernel_table()) {
    if (k.op == op) out.push_back(&k);
  }
  return out;
}

const KernelInfo& default_kernel(ir::OpKind op) {
  for (const KernelInfo& k : kernel_table()) {
    if (k.op == op) return k;
  }
  CUVIL_CHECK(false, "no kernel registered for op " + std::string(ir::to_string(op)));
  __builtin_unreachable();
}

const KernelInfo* find_kernel(ir::OpKind op, const std::string& name) {
  for (const KernelInfo& k : kernel_table()) {
    if (k.op == op && k.name == name) return &k;
  }
  return nullptr;
}

const KernelInfo* find_choice_kernel(ir::OpKind op, const std::string& choice, bool blocked) {
  for (const KernelInfo& k : kernel_table()) {
    if (k.op == op && k.choice == choice && k.blocked == blocked) return &k;
  }
  return nullptr;
}

const KernelInfo* find_precision_kernel(ir::OpKind op, const std::string& precision) {
  for (const KernelInfo& k : kernel_table()) {
    if (k.op == op && !k.precision.empty() && k.precision == precision) return &k;
  }
  return nullptr;
}

void schedule_step(Step& step, const KernelInfo& kernel) {
  step.schedule = kernel.schedule ? kernel.schedule(step) : nullptr;
}

bool replaces_input(const Step& step, size_t input) {
  if (!step.prepared || input >= 32) return false;
  const KernelInfo* k = find_kernel(step.op, step.kernel);
  return k != nullptr && ((k->replaced_inputs >> input) & 1u) != 0;
}

std::string kernel_arithmetic(const std::string& kernel_name) {
  for (const KernelInfo& k : kernel_table()) {
    if (!k.precision.empty() && k.name == kernel_name) return k.precision;
    if (!k.bf16_variant.empty() && k.bf16_variant == kernel_name) return "bf16";
  }
  return "fp32";
}

std::string lowering_of(const std::string& kernel_name) {
  const size_t dot = kernel_name.rfind('.');
  const std::string variant = dot == std::string::npos ? "" : kernel_name.substr(dot + 1);
  return variant == "onednn" ? "onednn" : "generated";
}

}  // namespace cuvil::runtime
