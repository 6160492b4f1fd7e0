#include "runtime/cpu/quantize_conv.h"

#include <algorithm>

#include "runtime/cpu/kernel_util.h"

namespace cuvil::runtime::cpu {

LowpConv lowp_conv(const Step& s) {
  LowpConv g;
  static_cast<ConvGeometry&>(g) = conv_geometry(s);
  return g;
}

bool lowp_conv_shape_ok(const Step& s) {
  return s.op == ir::OpKind::conv2d && is_nhwc(s) && s.attrs.get_int("groups", 1) == 1 &&
         has_unit_dilation(s);
}

std::vector<float> conv_weight_khwc(const LowpConv& g, const float* w) {
  std::vector<float> out(static_cast<size_t>(g.o * g.k()));
  for (int64_t o = 0; o < g.o; ++o) {
    for (int64_t ch = 0; ch < g.c; ++ch) {
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          out[static_cast<size_t>(o * g.k() + (ki * g.kw + kj) * g.c + ch)] =
              w[((o * g.c + ch) * g.kh + ki) * g.kw + kj];
        }
      }
    }
  }
  return out;
}

int64_t lowp_pixel_block(const LowpConv& g, int64_t budget_elements) {
  return std::clamp<int64_t>(budget_elements / std::max<int64_t>(g.k(), 1), 64, g.oh * g.ow);
}

}  // namespace cuvil::runtime::cpu
