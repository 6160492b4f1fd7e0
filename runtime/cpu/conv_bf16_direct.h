// conv2d.bf16's path for convolutions of few input channels (an image network's stem: 3
// channels, 7x7, stride 2): direct, with no im2col. The input is converted once per call into a
// zero-bordered bf16 copy in which the taps of one kernel row are side by side (NHWC), so a
// register tile broadcasts pairs of them straight from that copy: K runs over (kernel row, pair
// of consecutive elements of the row), and the pair at a row's odd end meets a zero weight.
// Where stride x channels is odd, every other pixel's window starts inside a pair: those read a
// second copy shifted by one element. Packing A for the GEMM instead cost several times the
// products (few channels leave each A row short and every output channel block repacks it).
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/cpu/aligned_array.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/quantize.h"
#include "runtime/cpu/quantize_conv.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

// Input channels below this run direct (the in-place gather is fast from 16 on).
inline constexpr int64_t kBf16DirectMaxChannels = 15;
// Pairs of elements per kernel row (kw * c / 2, rounded up) at most. A bound, not a measured
// crossing: wider rows (11 x 11 on 12 channels) are long enough for the GEMM's packing.
inline constexpr int64_t kBf16DirectMaxRowPairs = 64;

// Whether conv2d.bf16 runs a convolution of `c` input channels and a kh x kw window at stride
// (sh, sw) direct: few channels, kernel rows of at most kBf16DirectMaxRowPairs pairs, and not a
// 1x1 stride-1 product (a GEMM on the input as it is). Also read by the reduced-precision pass,
// which keeps the other few-channel convolutions in f32.
inline bool bf16_conv_runs_direct(int64_t c, int64_t kh, int64_t kw, int64_t sh, int64_t sw) {
  const bool unit_1x1 = kh == 1 && kw == 1 && sh == 1 && sw == 1;
  return !unit_1x1 && c >= 1 && c <= kBf16DirectMaxChannels &&
         (kw * c + 1) / 2 <= kBf16DirectMaxRowPairs;
}
inline bool bf16_conv_runs_direct(const LowpConv& g) {
  return bf16_conv_runs_direct(g.c, g.kh, g.kw, g.sh, g.sw);
}
// Whether conv2d.bf16 runs `g` direct on this CPU: the direct tiles need VDPBF16PS; without
// AVX512_BF16 these convolutions run the widened GEMM on their im2col instead (gemm_bf16.h).
inline bool bf16_conv_runs_direct_here(const LowpConv& g) {
  return cpu_has_avx512_bf16() && bf16_conv_runs_direct(g);
}

// The weights as [kh][row pair][o_pad] words: the pair (2j, 2j + 1) of kernel row i's elements
// (tap j' = e / c, channel e % c) in the low and high halves, zero past kw * c and past o.
struct Bf16DirectWeights {
  int64_t row_pairs = 0;  // (kw * c + 1) / 2
  int64_t o_pad = 0;      // o rounded up to 16
  AlignedArray<uint32_t> words;
};

// w is the step's [o, c, kh, kw] weight.
std::shared_ptr<Bf16DirectWeights> pack_bf16_direct_weights(const LowpConv& g, const float* w);

// y[n, oh, ow, o] = conv(x[n, h, w, c]) + bias, then `epi`; bias may be null. Runs on `pool`.
void conv2d_bf16_direct(const LowpConv& g, const Bf16DirectWeights& w, const float* x,
                        const float* bias, const Epilogue& epi, float* y, ThreadPool& pool);

}  // namespace cuvil::runtime::cpu
