// Run-time choice of the GEMM instruction set: CPUID (less CUVIL_CPU_DISABLE), then CUVIL_ISA,
// then a test override.
#include <atomic>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/gemm_ukernel.h"

namespace cuvil::runtime::cpu {

namespace {

GemmIsa best_supported() {
  if (cpu_supports(GemmIsa::avx512)) return GemmIsa::avx512;
  if (cpu_supports(GemmIsa::avx2)) return GemmIsa::avx2;
  return GemmIsa::ref;
}

void require_supported(GemmIsa isa, const std::string& source) {
  if (!cpu_supports(isa)) {
    throw UserError(source + ": this CPU does not support " + to_string(isa) +
                    " (best: " + to_string(best_supported()) + ")");
  }
}

GemmIsa from_environment() {
  const char* env = std::getenv("CUVIL_ISA");
  if (env == nullptr || *env == '\0') return best_supported();
  const GemmIsa isa = parse_gemm_isa(env);
  require_supported(isa, "CUVIL_ISA=" + std::string(env));
  return isa;
}

std::atomic<int> override_isa{-1};

}  // namespace

const char* to_string(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::ref:
      return "ref";
    case GemmIsa::avx2:
      return "avx2";
    case GemmIsa::avx512:
      return "avx512";
  }
  return "?";
}

GemmIsa parse_gemm_isa(const std::string& name) {
  if (name == "ref") return GemmIsa::ref;
  if (name == "avx2") return GemmIsa::avx2;
  if (name == "avx512") return GemmIsa::avx512;
  throw UserError("unknown GEMM instruction set '" + name + "' (expected ref, avx2 or avx512)");
}

bool cpu_supports(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::ref:
      return true;
    case GemmIsa::avx2:
      return cpu_has_avx2();
    case GemmIsa::avx512:
      return cpu_has_avx512();
  }
  return false;
}

GemmIsa active_gemm_isa() {
  const int forced = override_isa.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<GemmIsa>(forced);
  static const GemmIsa from_env = from_environment();
  return from_env;
}

void set_gemm_isa(GemmIsa isa) {
  require_supported(isa, std::string("GEMM instruction set ") + to_string(isa));
  override_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
}

const std::vector<MicroKernel>& micro_kernels(GemmIsa isa) {
  static const std::vector<MicroKernel> ref = ref_micro_kernels();
  static const std::vector<MicroKernel> avx2 = avx2_micro_kernels();
  static const std::vector<MicroKernel> avx512 = avx512_micro_kernels();
  switch (isa) {
    case GemmIsa::avx2:
      return avx2;
    case GemmIsa::avx512:
      return avx512;
    case GemmIsa::ref:
      break;
  }
  return ref;
}

const MicroKernel& pick_micro_kernel(GemmIsa isa, int mr, int nr) {
  const std::vector<MicroKernel>& kernels = micro_kernels(isa);
  for (const MicroKernel& k : kernels) {
    if (k.mr == mr && k.nr == nr) return k;
  }
  return kernels.front();
}

}  // namespace cuvil::runtime::cpu
