// Run-time instruction-set choice of the CPU kernels that have per-ISA micro-kernels
// (convolutions, Winograd, flash attention, norms, elementwise math). Each such kernel keeps its
// portable loops (packing, blocking, threading) in one file and its register tiles in per-ISA
// files: the portable tile beside it (the reference of the fast one), the AVX-512 one in
// `<kernel>_avx512.cc`, compiled for AVX-512 by target_avx512_begin.h whatever -march says. The
// choice is made here, from CPUID, so native (-march=native) and portable (CUVIL_NATIVE=OFF)
// builds run the same code on the same CPU.
#pragma once

#include <cstdint>
#include <vector>

namespace cuvil::runtime::cpu {

// Whether the comma list in CUVIL_CPU_DISABLE names `feature` ("avx512", "avx2", "avx512_bf16",
// "avx512_vnni", "amx_bf16"): the CPU is then treated as lacking it. Read at every call.
bool cpu_feature_disabled(const char* feature);

// Whether the CPU has AVX-512 F, BW, VL, DQ and FMA (CPUID), and CUVIL_CPU_DISABLE does not list
// "avx512". The one feature check of every AVX-512 fp32 path (the GEMM's included).
bool cpu_has_avx512();
// Whether the CPU has AVX2 and FMA, and CUVIL_CPU_DISABLE does not list "avx2".
bool cpu_has_avx2();

enum class KernelIsa : uint8_t { portable = 0, avx512 = 1 };

const char* to_string(KernelIsa isa);

// The instruction set of the kernels above: avx512 when the GEMM's is (active_gemm_isa(): the
// best the CPU supports, CUVIL_ISA, or set_gemm_isa), else the portable tiles. So
// CUVIL_CPU_DISABLE=avx512, CUVIL_ISA=ref and CUVIL_ISA=avx2 all select the portable tiles.
KernelIsa kernel_isa();

// The kernel families with per-ISA micro-kernels and the instruction set each runs now (what its
// own dispatch picks for the general case; conv2d.depthwise_nhwc with a channel multiplier > 1
// always runs the portable tile).
struct KernelFamilyIsa {
  const char* family;
  KernelIsa isa;
};
std::vector<KernelFamilyIsa> kernel_family_isas();

// Each family's own choice (defined in the family's file).
KernelIsa conv2d_direct_nhwc_isa();
KernelIsa conv2d_direct_nchw16c_isa();
KernelIsa conv2d_depthwise_nhwc_isa();
KernelIsa conv2d_winograd_nhwc_isa();
KernelIsa sdpa_flash_isa();
KernelIsa norms_isa();
KernelIsa elementwise_math_isa();

}  // namespace cuvil::runtime::cpu
