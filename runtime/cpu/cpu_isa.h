// Run-time instruction-set choice of the CPU kernels that have per-ISA micro-kernels
// (convolutions, Winograd, flash attention, norms, elementwise math). Each such kernel keeps its
// portable loops (packing, blocking, threading) in one file and its register tiles in per-ISA
// files: the portable tile beside it (the reference of the fast one), the AVX-512 one in
// `<kernel>_avx512.cc`, compiled for AVX-512 by target_avx512_begin.h whatever -march says, and
// for some an AVX2 one in `<kernel>_avx2.cc` (target_avx2_begin.h). The
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

enum class KernelIsa : uint8_t { portable = 0, avx512 = 1, avx2 = 2 };

const char* to_string(KernelIsa isa);

// The instruction set of the kernels above follows the GEMM's (active_gemm_isa(): the best the
// CPU supports, CUVIL_ISA, or set_gemm_isa): avx512, avx2, or the portable tiles for ref. So
// CUVIL_CPU_DISABLE=avx512 or CUVIL_ISA=avx2 select the AVX2 tiles, and CUVIL_ISA=ref the
// portable ones.
KernelIsa kernel_isa();
// kernel_isa() for a family without AVX2 tiles: avx512, else portable.
KernelIsa kernel_isa_avx512_or_portable();

// A family's set of micro-kernels for `isa`, of its three: the one choice of every family's
// driver.
template <class Set>
const Set& set_for_isa(KernelIsa isa, const Set& avx512, const Set& avx2, const Set& portable) {
  switch (isa) {
    case KernelIsa::avx512:
      return avx512;
    case KernelIsa::avx2:
      return avx2;
    case KernelIsa::portable:
      break;
  }
  return portable;
}

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
