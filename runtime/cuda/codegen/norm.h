// Row-reduction kernels: layer_norm and rms_norm over the last dim, group_norm over
// (C/groups, H, W) per (n, group) in NCHW or NHWC, and softmax over the last dim. One thread
// block per row (per (n, group) for group_norm); fp32 statistics in two passes over the row
// (mean, then centred variance: no cancellation for large means).
#pragma once

#include <cstdint>

#include "runtime/cuda/codegen/kernel_source.h"

namespace cuvil::runtime::cuda::codegen {

enum class NormKind : uint8_t { layer_norm, rms_norm, group_norm, softmax };

struct NormProblem {
  NormKind kind = NormKind::layer_norm;
  // layer/rms/softmax: rows x dim. group_norm: n x c x (h*w) = spatial, `groups`.
  int64_t rows = 1, dim = 1;
  int64_t n = 1, c = 1, spatial = 1, groups = 1;
  bool nhwc = false;  // group_norm layout
  double eps = 1e-5;
  ElemType io = ElemType::bf16;    // x and y
  ElemType param = ElemType::f32;  // gamma and beta
};

struct NormTiles {
  int threads = 256;
  int vector_width = 4;  // elements per thread per access along the row (contiguous rows only)
  bool operator==(const NormTiles&) const = default;
};

struct NormKernelParams {
  const void* x = nullptr;
  void* y = nullptr;
  const void* gamma = nullptr;  // unused by softmax
  const void* beta = nullptr;   // layer_norm/group_norm only
  int64_t rows = 0, dim = 0;
  int64_t n = 0, c = 0, spatial = 0, groups = 0;
  double eps = 0;
};

void validate_norm(const NormProblem& problem, const NormTiles& tiles);
KernelSource norm_source(const NormProblem& problem, const NormTiles& tiles);
LaunchGeometry norm_geometry(const NormProblem& problem, const NormTiles& tiles);
NormKernelParams norm_params(const NormProblem& problem, const void* x, void* y,
                             const void* gamma = nullptr, const void* beta = nullptr);

}  // namespace cuvil::runtime::cuda::codegen
