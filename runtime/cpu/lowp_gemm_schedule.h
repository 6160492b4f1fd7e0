// Schedule hooks (KernelInfo::schedule) of the reduced-precision kernels on gemm_bf16 and
// gemm_int8: linear.bf16, matmul.bf16, conv2d.bf16, linear.int8 and conv2d.int8. They read, once
// at lowering, the conv geometry, the gemm-tiling pass's bf16/int8 panel sizes and the threading
// pass's split of C (gemm.partition, as the fp32 GEMM reads it) into a
// LowpSchedule; the runs read that struct (scheduled_lowp).
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/cpu/gemm_bf16.h"
#include "runtime/cpu/gemm_int8.h"
#include "runtime/cpu/quantize_conv.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

struct LowpSchedule {
  LowpConv conv{};  // conv2d steps only
  // conv2d.bf16 runs direct (conv_bf16_direct.h): decided here, once, and read by its prepare
  // hook and its runs, so the prepared weights' form and the path that reads them always agree.
  bool bf16_direct = false;
  int64_t pixel_block = 0;  // conv2d, not 1x1: output pixels per im2col block (int8; bf16 on AMX)
  Bf16Blocking bf16;        // bf16 steps
  int64_t int8_mc = kInt8DefaultMc;  // int8 steps
  GemmPartition int8_partition = GemmPartition::automatic;
};

// The hooks of the bf16 kernels (linear, matmul, conv2d) and of the int8 ones (linear, conv2d).
// A step whose every product has few rows (kBf16SkinnyRows, kInt8SkinnyRows) streams B once and
// reads no panel size: the knobs reach nothing there (Step::reach).
std::shared_ptr<const void> bf16_gemm_schedule(const Step& step);
std::shared_ptr<const void> int8_gemm_schedule(const Step& step);

const LowpSchedule& scheduled_lowp(const Step& step);

// Whether conv2d.bf16 runs a (non-1x1) convolution as one product whose A it gathers from the
// input while packing (Bf16Gemm::im2col), rather than per im2col block of a column buffer: more
// than kBf16SkinnyRows pixels, on the VDPBF16PS path (AMX tiles take A row-major).
inline bool bf16_conv_gathers_in_place(const LowpConv& g) {
  return g.n * g.oh * g.ow > kBf16SkinnyRows && !cpu_has_amx_bf16();
}

}  // namespace cuvil::runtime::cpu
