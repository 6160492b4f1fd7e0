// The instruction sets a kernel test runs under: every GEMM ISA this CPU supports (reference,
// AVX2, AVX-512), and a sweep that runs a test body under each (the convolution and GEMM tiles
// follow the GEMM's choice), restoring the choice afterwards.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "runtime/cpu/gemm_ukernel.h"

namespace cuvil::runtime::testing {

inline std::vector<cpu::GemmIsa> available_isas() {
  std::vector<cpu::GemmIsa> out;
  for (cpu::GemmIsa isa : {cpu::GemmIsa::ref, cpu::GemmIsa::avx2, cpu::GemmIsa::avx512}) {
    if (cpu::cpu_supports(isa)) out.push_back(isa);
  }
  return out;
}

template <class Fn>
void for_each_isa(Fn fn) {
  const cpu::GemmIsa before = cpu::active_gemm_isa();
  for (cpu::GemmIsa isa : available_isas()) {
    SCOPED_TRACE(cpu::to_string(isa));
    cpu::set_gemm_isa(isa);
    fn();
  }
  cpu::set_gemm_isa(before);
}

}  // namespace cuvil::runtime::testing
