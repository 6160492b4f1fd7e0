// The per-row micro-kernels of the norms and softmax (norms.cc): the portable set in norms.cc, the
// AVX-512 and AVX2 sets in norms_avx512.cc and norms_avx2.cc; norms_isa() picks one per call.
#pragma once

#include <cstdint>

namespace cuvil::runtime::cpu {

// Elements summed in fp32 lanes before the partial sum joins the fp64 total; both row kernel
// sets use it, so that they round alike.
inline constexpr int64_t kNormSumChunk = 1024;

struct NormRowKernels {
  // Sums of x, x^2 and (x - mean)^2 over n floats: fp32 lanes over chunks of kNormSumChunk, fp64
  // across.
  double (*sum)(const float* x, int64_t n);
  double (*sum_sq)(const float* x, int64_t n);
  double (*sum_sq_dev)(const float* x, int64_t n, float mean);
  // max over n >= 0 floats (-inf for none).
  float (*row_max)(const float* x, int64_t n);
  // y = x * s * gamma (RMSNorm) and y = (x - mean) * s * gamma + beta (LayerNorm) over n floats.
  void (*rms_row)(const float* x, float s, const float* gamma, float* y, int64_t n);
  void (*layer_row)(const float* x, float mean, float s, const float* gamma, const float* beta,
                    float* y, int64_t n);
};

const NormRowKernels& norm_row_kernels_avx512();
const NormRowKernels& norm_row_kernels_avx2();

}  // namespace cuvil::runtime::cpu
