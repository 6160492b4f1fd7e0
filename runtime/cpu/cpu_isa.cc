#include "runtime/cpu/cpu_isa.h"

#include <cstdlib>
#include <string>

#include "runtime/cpu/gemm_ukernel.h"

namespace cuvil::runtime::cpu {

bool cpu_feature_disabled(const char* feature) {
  const char* env = std::getenv("CUVIL_CPU_DISABLE");
  if (!env) return false;
  const std::string list = std::string(",") + env + ",";
  return list.find(std::string(",") + feature + ",") != std::string::npos;
}

bool cpu_has_avx512() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("fma") && !cpu_feature_disabled("avx512");
#else
  return false;
#endif
}

bool cpu_has_avx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         !cpu_feature_disabled("avx2");
#else
  return false;
#endif
}

const char* to_string(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::avx512:
      return "avx512";
    case KernelIsa::avx2:
      return "avx2";
    case KernelIsa::portable:
      break;
  }
  return "portable";
}

KernelIsa kernel_isa() {
  switch (active_gemm_isa()) {
    case GemmIsa::avx512:
      return KernelIsa::avx512;
    case GemmIsa::avx2:
      return KernelIsa::avx2;
    case GemmIsa::ref:
      break;
  }
  return KernelIsa::portable;
}

KernelIsa kernel_isa_avx512_or_portable() {
  return kernel_isa() == KernelIsa::avx512 ? KernelIsa::avx512 : KernelIsa::portable;
}

std::vector<KernelFamilyIsa> kernel_family_isas() {
  return {
      {"conv2d.direct_nhwc", conv2d_direct_nhwc_isa()},
      {"conv2d.direct_nchw16c", conv2d_direct_nchw16c_isa()},
      {"conv2d.depthwise_nhwc", conv2d_depthwise_nhwc_isa()},
      {"conv2d.winograd_nhwc", conv2d_winograd_nhwc_isa()},
      {"sdpa.flash", sdpa_flash_isa()},
      {"norms", norms_isa()},
      {"elementwise_math", elementwise_math_isa()},
  };
}

}  // namespace cuvil::runtime::cpu
