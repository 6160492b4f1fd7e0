// The reference micro-kernels: plain C++ loops, one instantiation per register tile that any
// instruction set implements, so every vector kernel has an oracle of the same shape.
#include "runtime/cpu/gemm_ukernel.h"

namespace cuvil::runtime::cpu {

namespace {

template <int MR, int NR>
void micro_ref(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
  float acc[MR][NR] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < MR; ++i) {
      const float ai = a[p * MR + i];
      for (int j = 0; j < NR; ++j) acc[i][j] += ai * b[p * NR + j];
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + acc[i][j];
  }
}

}  // namespace

std::vector<MicroKernel> ref_micro_kernels() {
  // Default first: the AVX-512 default tile, so CUVIL_ISA=ref mirrors the default path.
  return {
      {GemmIsa::ref, 12, 32, micro_ref<12, 32>}, {GemmIsa::ref, 14, 32, micro_ref<14, 32>},
      {GemmIsa::ref, 8, 32, micro_ref<8, 32>},   {GemmIsa::ref, 6, 64, micro_ref<6, 64>},
      {GemmIsa::ref, 4, 64, micro_ref<4, 64>},   {GemmIsa::ref, 6, 16, micro_ref<6, 16>},
      {GemmIsa::ref, 4, 24, micro_ref<4, 24>},
  };
}

}  // namespace cuvil::runtime::cpu
