#include "runtime/cpu/quantize_conv.h"

#include <algorithm>

#include "runtime/cpu/kernel_util.h"

namespace cuvil::runtime::cpu {

LowpConv lowp_conv(const Step& s) {
  LowpConv g{};
  const Dims4 x = dims4(s.input_shapes[0], true);
  const Dims4 y = dims4(s.output_shape, true);
  const ir::Shape& w = s.input_shapes[1];
  const auto stride = attr_pair(s, "stride", 1);
  const auto pad = attr_pair(s, "pad", 0);
  g.n = x.n, g.c = x.c, g.h = x.h, g.w = x.w;
  g.o = w[0], g.kh = w[2], g.kw = w[3];
  g.oh = y.h, g.ow = y.w;
  g.sh = stride[0], g.sw = stride[1], g.ph = pad[0], g.pw = pad[1];
  return g;
}

bool lowp_conv_shape_ok(const Step& s) {
  return s.op == ir::OpKind::conv2d && is_nhwc(s) && s.attrs.get_int("groups", 1) == 1;
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
