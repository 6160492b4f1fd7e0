// Convolution geometry shared by the reduced-precision conv kernels (NHWC, groups = 1): the
// weight is flattened to [O, K] with K ordered (kh, kw, c) so that im2col copies whole runs of
// C contiguous channels per filter tap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/cpu/conv_geometry.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

// An NHWC, groups = 1 convolution as a GEMM of K = kh * kw * c.
struct LowpConv : ConvGeometry {
  int64_t k() const { return kh * kw * c; }
  bool is_1x1() const { return is_1x1_unit_stride(); }
};

// Geometry of an NHWC, groups = 1 conv2d step (read once at lowering: lowp_gemm_schedule.h).
LowpConv lowp_conv(const Step& step);
// Whether the step is an NHWC conv2d with groups = 1 (what the reduced-precision kernels run).
bool lowp_conv_shape_ok(const Step& step);
// The weight [o, c, kh, kw] reordered to [o][kh][kw][c].
std::vector<float> conv_weight_khwc(const LowpConv& g, const float* w);
// Output pixels per im2col block for a column buffer of about `budget_elements`.
int64_t lowp_pixel_block(const LowpConv& g, int64_t budget_elements);

// col[p][k] for output pixels [p0, p0 + np) of image img, k = (kh, kw, c); taps in the padding
// read `pad`. T is float (bf16 path) or uint8_t (int8 path, pad = the zero point). With unit
// dilation a window row's taps are consecutive input pixels, so each row is one copy of its
// taps inside the image between fills of the padding (one tap at a time cost a stem of 3
// channels and 49 taps more than its product).
template <class T>
void im2col_khwc(const LowpConv& g, const T* x, int64_t img, int64_t p0, int64_t np, T pad, T* col,
                 int64_t ldcol, int64_t begin, int64_t end) {
  (void)np;
  const int64_t row = g.kw * g.c;
  for (int64_t p = begin; p < end; ++p) {
    const int64_t oy = (p0 + p) / g.ow, ox = (p0 + p) % g.ow;
    const int64_t ix0 = ox * g.sw - g.pw;
    // The window's taps inside the image's columns: [kj0, kj1).
    const int64_t kj0 = first_tap_inside(ix0, 1, g.kw);
    const int64_t kj1 = end_tap_inside(ix0, g.w, 1, g.kw);
    T* dst = col + p * ldcol;
    for (int64_t ki = 0; ki < g.kh; ++ki, dst += row) {
      const int64_t iy = oy * g.sh - g.ph + ki;
      if (iy < 0 || iy >= g.h || kj0 == kj1) {
        std::fill_n(dst, row, pad);
        continue;
      }
      std::fill_n(dst, kj0 * g.c, pad);
      std::copy_n(x + ((img * g.h + iy) * g.w + ix0 + kj0) * g.c, (kj1 - kj0) * g.c,
                  dst + kj0 * g.c);
      std::fill_n(dst + kj1 * g.c, (g.kw - kj1) * g.c, pad);
    }
  }
}

}  // namespace cuvil::runtime::cpu
