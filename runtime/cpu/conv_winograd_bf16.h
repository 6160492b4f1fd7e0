// The bf16 register tile of conv2d.winograd_bf16 (AVX512_BF16 dot products): the per-ISA
// micro-kernel apart from the portable Winograd driver (conv_winograd_nhwc.cc).
#pragma once

#include <cstdint>

namespace cuvil::runtime::cpu {

// One of the a^2 GEMMs for MR tiles x NV vectors of output channels over `pairs` input-channel
// pairs: m[p][lanes] = sum_c v[p * v_stride + c] * u[c][lanes], v and u in bf16 with fp32
// accumulation. v: a tile's channels contiguous (pairs adjacent), v_stride bf16 values apart;
// u: per pair, bw lanes of (even, odd) bf16 pairs; m: bw floats per tile. Requires
// cpu_has_avx512_bf16().
using WinogradBf16GemmFn = void (*)(const uint16_t* v, int64_t v_stride, int64_t pairs,
                                    const uint16_t* u, int64_t bw, float* m);
WinogradBf16GemmFn winograd_bf16_gemm(int mr, int nv);

}  // namespace cuvil::runtime::cpu
