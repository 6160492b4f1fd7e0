// The geometry of a conv2d step (physical layout, shapes, stride, padding, dilation, groups),
// shared by the convolution kernels (1x1-as-GEMM, im2col, direct) and by the lowering choice that
// classifies convolutions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/cpu/kernel_util.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

struct ConvGeometry {
  bool nhwc = false;
  bool blocked = false;                    // nchw16c: c and o are logical (unpadded) counts
  int64_t n = 0, c = 0, h = 0, w = 0;      // input
  int64_t o = 0, kh = 0, kw = 0;           // weight [o, c/groups, kh, kw]
  int64_t oh = 0, ow = 0;                  // output
  int64_t sh = 1, sw = 1, ph = 0, pw = 0;  // stride, padding
  int64_t dh = 1, dw = 1;                  // dilation: tap (ki, kj) reads input pixel ki*dh, kj*dw
  int64_t groups = 1, cg = 0, og = 0;      // per-group channels

  bool is_1x1_unit_stride() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0;
  }
};

// Dilation (the "dilation" attribute, [1, 1] when absent): im2col, the direct and depthwise NHWC
// kernels, the 1x1 GEMM (where it has no effect) and oneDNN run dilated convolutions; Winograd,
// the blocked kernel and the reduced-precision kernels do not, and say so in their supports();
// the passes that pick layouts and precisions ask the same of a node.
inline bool has_unit_dilation(const ir::Attrs& attrs) {
  return attrs.get_ints("dilation", {1, 1}) == std::vector<int64_t>{1, 1};
}
inline bool has_unit_dilation(const Step& s) {
  return has_unit_dilation(s.attrs);
}

// Taps k of a window of `taps` whose first tap is input coordinate i0 (tap k at i0 + k * d): the
// first inside the input, and one past the last inside an input of `extent`. Both lie in
// [0, taps], the end never before the first (an empty range where the window lies wholly in the
// padding).
inline int64_t first_tap_inside(int64_t i0, int64_t d, int64_t taps) {
  return i0 >= 0 ? 0 : std::min(taps, (-i0 + d - 1) / d);
}
inline int64_t end_tap_inside(int64_t i0, int64_t extent, int64_t d, int64_t taps) {
  const int64_t end = i0 >= extent ? 0 : std::min(taps, (extent - i0 + d - 1) / d);
  return std::max(end, first_tap_inside(i0, d, taps));
}

// A depthwise convolution: groups == input channels, so each group has one input channel
// (weight [O, 1, KH, KW]) and O / groups output channels (the channel multiplier). Groups must
// be above 1, except for the 1 -> 1 channel convolution, which is depthwise by any definition;
// a groups-1 conv from one input channel to several outputs is an ordinary convolution.
inline bool is_depthwise_conv(int64_t groups, const ir::Shape& weight) {
  return weight.size() == 4 && weight[1] == 1 && (groups > 1 || weight[0] == 1);
}

// A grouped convolution of 2, 4 or 8 channels per group in and out (ResNeXt's and RegNet's 3x3s):
// a vector of 16 channels holds whole groups of input and output alike, so the depthwise kernel
// runs it (G multiplies per input vector and tap) where a kernel that gives each group its own
// 16 output lanes would leave most of them empty.
inline bool is_narrow_group_conv(int64_t groups, const ir::Shape& weight) {
  if (weight.size() != 4 || groups <= 1) return false;
  const int64_t width = weight[1];
  return (width == 2 || width == 4 || width == 8) && weight[0] == groups * width;
}

inline ConvGeometry conv_geometry(const Step& s) {
  ConvGeometry g;
  g.nhwc = is_nhwc(s);
  g.blocked = is_nchw16c(s);
  const ir::Shape& w = s.input_shapes[1];
  Dims4 x = dims4(s.input_shapes[0], g.nhwc);
  const Dims4 y = dims4(s.output_shape, g.nhwc);
  if (g.blocked) x.c = w[1] * s.attrs.get_int("groups", 1);  // [N, Cb, H, W, 16]
  const auto stride = attr_pair(s, "stride", 1);
  const auto pad = attr_pair(s, "pad", 0);
  const auto dilation = attr_pair(s, "dilation", 1);
  g.n = x.n, g.c = x.c, g.h = x.h, g.w = x.w;
  g.o = w[0], g.kh = w[2], g.kw = w[3];
  g.oh = y.h, g.ow = y.w;
  g.sh = stride[0], g.sw = stride[1], g.ph = pad[0], g.pw = pad[1];
  g.dh = dilation[0], g.dw = dilation[1];
  g.groups = s.attrs.get_int("groups", 1);
  g.cg = g.c / g.groups;
  g.og = g.o / g.groups;
  return g;
}

}  // namespace cuvil::runtime::cpu
