// Convolution geometry shared by the reduced-precision conv kernels (NHWC, groups = 1): the
// weight is flattened to [O, K] with K ordered (kh, kw, c) so that im2col copies whole runs of
// C contiguous channels per filter tap.
#pragma once

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
// read `pad`. T is float (bf16 path) or uint8_t (int8 path, pad = the zero point).
template <class T>
void im2col_khwc(const LowpConv& g, const T* x, int64_t img, int64_t p0, int64_t np, T pad, T* col,
                 int64_t ldcol, int64_t begin, int64_t end) {
  (void)np;
  for (int64_t p = begin; p < end; ++p) {
    const int64_t oy = (p0 + p) / g.ow, ox = (p0 + p) % g.ow;
    T* dst = col + p * ldcol;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t iy = oy * g.sh - g.ph + ki;
      for (int64_t kj = 0; kj < g.kw; ++kj, dst += g.c) {
        const int64_t ix = ox * g.sw - g.pw + kj;
        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
          for (int64_t ch = 0; ch < g.c; ++ch) dst[ch] = pad;
        } else {
          const T* src = x + ((img * g.h + iy) * g.w + ix) * g.c;
          for (int64_t ch = 0; ch < g.c; ++ch) dst[ch] = src[ch];
        }
      }
    }
  }
}

}  // namespace cuvil::runtime::cpu
