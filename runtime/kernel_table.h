// The runtime's table of CPU kernels: for each op, the registered kernels by name ("op.variant")
// and the default one. Lowering looks kernels up here; a node attribute "impl" picks a variant.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "passes/ir/op.h"
#include "runtime/plan.h"

namespace cuvil::runtime {

struct KernelInfo {
  ir::OpKind op;
  std::string name;  // e.g. "conv2d.im2col"
  KernelFn fn = nullptr;
  // When set, whether the kernel can run this step (e.g. 1x1 convolutions only); null = any.
  bool (*supports)(const Step& step) = nullptr;
  std::string description;
  // When set, reads the step's schedule attributes into a typed struct once at lowering
  // (Step::schedule), before prepare, which may use it. A bad value is a UserError.
  std::shared_ptr<const void> (*schedule)(const Step& step) = nullptr;
  // When set, called once at lowering with the step's inputs (constant_inputs[i] is null unless
  // input i is a constant); its result becomes Step::prepared. Lets a kernel lift work on
  // weights (packing, precision conversion) out of the measured loop.
  std::shared_ptr<const void> (*prepare)(const Step& step,
                                         const float* const* constant_inputs) = nullptr;
  // Bit i set: once prepare returned data, the kernel never reads input i again (the prepared
  // form replaces it). Lowering then releases a constant that no other step reads, and the
  // executor binds that operand to nothing.
  uint32_t replaced_inputs = 0;
  // When set, the kernel reduced-precision picks for a bf16 node lowered to this one (instead of
  // the op's generic "<op>.bf16"): the same algorithm in bf16.
  std::string bf16_variant;
  // When set, the attributes that fix this kernel's size-dependent automatic choices as they
  // resolve for `step` (Winograd's tile, a thread split): pinned onto a scaled-down copy of the
  // node, they make it run the code the full-size node runs (passes::resolve_pins).
  ir::Attrs (*pin)(const Step& step, int threads) = nullptr;
  // The select-lowering choice that names this kernel ("gemm", "im2col", "direct", "winograd",
  // "depthwise", "onednn"); empty when no choice names it.
  std::string choice;
  // Runs blocked (nchw16c) steps only: its choice names it for blocked nodes, and only it.
  bool blocked = false;
  // "bf16" or "int8": the op's reduced-precision kernel of that precision, the one
  // reduced-precision picks (unless the node's kernel has a bf16_variant); empty for the others.
  std::string precision;
};

// Every registered kernel, ops in OpKind order, the default kernel of each op first.
const std::vector<KernelInfo>& kernel_table();
// The kernels registered for `op` (default first).
std::vector<const KernelInfo*> kernels_for(ir::OpKind op);
// The op's default kernel (every op has one).
const KernelInfo& default_kernel(ir::OpKind op);
// The kernel with this name for this op, or nullptr.
const KernelInfo* find_kernel(ir::OpKind op, const std::string& name);
// The kernel `choice` names for this op's blocked (nchw16c) or other nodes, or nullptr.
const KernelInfo* find_choice_kernel(ir::OpKind op, const std::string& choice, bool blocked);
// The op's kernel of reduced precision `precision` ("bf16", "int8"), or nullptr.
const KernelInfo* find_precision_kernel(ir::OpKind op, const std::string& precision);
// Sets Step::schedule from the kernel's schedule hook. Lowering does it for every CPU step; code
// that builds a Step by hand must do it before the kernel runs.
void schedule_step(Step& step, const KernelInfo& kernel);
// The step's schedule as the type its kernel's hook made; the step must have been scheduled.
template <class T>
const T& schedule_of(const Step& step) {
  CUVIL_CHECK(step.schedule != nullptr,
              "step '" + step.node_name + "' (" + step.kernel + ") runs unscheduled");
  return *static_cast<const T*>(step.schedule.get());
}
// Whether the step's kernel, having prepared, never reads operand `input` (replaced_inputs).
bool replaces_input(const Step& step, size_t input);
// How a kernel was lowered, from its registered name: "onednn" (the library) or "generated"
// (cuvil's own kernels), as the pipeline's lowering choice names them.
std::string lowering_of(const std::string& kernel_name);
// The arithmetic of a registered kernel's products: "bf16" or "int8" for the reduced-precision
// kernels (those with a precision, and the bf16 variants they name), else "fp32" (unknown names
// too). The fp32 FMA peak bounds only fp32 work.
std::string kernel_arithmetic(const std::string& kernel_name);

}  // namespace cuvil::runtime
