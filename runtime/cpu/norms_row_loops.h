// The row kernels of the norms whose loops need no intrinsics: plain loops that each file
// including this header compiles for its own instruction set (norms.cc portable; norms_avx512.cc
// and norms_avx2.cc include it after their target pragma, so their copies are vectorised for
// AVX-512 or AVX2 whatever -march says). Unnamed namespace: no copy is shared between files.
#pragma once

#include <cstdint>

namespace cuvil::runtime::cpu {
namespace {

// y = x * s * gamma (RMSNorm).
void rms_row_loop(const float* x, float s, const float* gamma, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s * gamma[i];
}

// y = (x - mean) * s * gamma + beta (LayerNorm).
void layer_row_loop(const float* x, float mean, float s, const float* gamma, const float* beta,
                    float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * s * gamma[i] + beta[i];
}

}  // namespace
}  // namespace cuvil::runtime::cpu
