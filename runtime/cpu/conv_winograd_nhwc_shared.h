// What conv2d.winograd_nhwc's portable file (conv_winograd_nhwc.cc: schedule, weight transform,
// portable transforms and GEMM tile) and its AVX-512 and AVX2 files (conv_winograd_nhwc_avx512.cc,
// conv_winograd_nhwc_avx2.cc) share: the transform matrices, the shape of a call, and their entry
// points.
#pragma once

#include <cstdint>

#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/conv_kernels.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/register_tile.h"

namespace cuvil::runtime::cpu::winograd {

// Transform matrices: Y = AT [(G g G^T) (.) (BT d B)] A, with interpolation points 0, +-1 (m = 2)
// and 0, +-1, +-2 (m = 4), both with the point at infinity.
template <int M>
struct Winograd;

template <>
struct Winograd<2> {
  static constexpr int kAlpha = 4;
  static constexpr float BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static constexpr float AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};

template <>
struct Winograd<4> {
  static constexpr int kAlpha = 6;
  static constexpr float BT[6][6] = {
      {4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
      {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1},
  };
  static constexpr double G[6][3] = {
      {1.0 / 4, 0, 0},
      {-1.0 / 6, -1.0 / 6, -1.0 / 6},
      {-1.0 / 6, 1.0 / 6, -1.0 / 6},
      {1.0 / 24, 1.0 / 12, 1.0 / 6},
      {1.0 / 24, -1.0 / 12, 1.0 / 6},
      {0, 0, 1},
  };
  static constexpr float AT[4][6] = {
      {1, 1, 1, 1, 1, 0},
      {0, 1, -1, 2, -2, 0},
      {0, 1, 1, 4, 4, 0},
      {0, 1, -1, 8, -8, 1},
  };
};

struct WinogradShape {
  int m = 4, alpha = 6;
  int nv = 1;           // vectors per output-channel block
  int64_t bw = kLanes;  // block width in channels (nv * 16)
  int64_t blocks = 1;   // ceil(K / bw)
  int mr = 1;           // most tiles per register tile
  int64_t cp = kLanes;  // C rounded up to 16: floats per tile in V
  // A dilated convolution (ConvGeometry dh x dw) runs as dh * dw undilated ones, one per phase:
  // the outputs (oy, ox) with oy % dh = py and ox % dw = px read only inputs of the same phase, dh
  // rows and dw columns apart. Tiles cover each phase's grid of ceil(OH / dh) x ceil(OW / dw).
  int64_t th = 1, tw = 1;       // tile rows per phase grid, tiles per tile row
  int64_t tiles = 1;            // n * dh * dw * th * tw
  int64_t tiles_per_block = 1;  // tiles transformed and multiplied together
};

// Input channel pairs of conv2d.winograd_bf16's U and V.
inline int64_t channel_pairs(const ConvGeometry& g) {
  return (g.c + 1) / 2;
}

// The convolution with V and U in fp32 (conv2d.winograd_nhwc) or bf16 (conv2d.winograd_bf16),
// AVX-512 transforms and GEMM tiles; called only when conv2d_winograd_nhwc_isa() is avx512.
void run_avx512(const KernelArgs& a, const ConvGeometry& g, const WinogradShape& d,
                const WinogradConvPlan& plan, const float* u);
void run_avx512(const KernelArgs& a, const ConvGeometry& g, const WinogradShape& d,
                const WinogradConvPlan& plan, const uint16_t* u);
// The fp32 convolution with AVX2 transforms and GEMM tiles (conv_winograd_nhwc_avx2.cc); called
// only when conv2d_winograd_nhwc_isa() is avx2.
void run_avx2(const KernelArgs& a, const ConvGeometry& g, const WinogradShape& d,
              const WinogradConvPlan& plan, const float* u);

}  // namespace cuvil::runtime::cpu::winograd
