// Direct 2-D convolution (stride, symmetric padding, dilation, groups, optional bias) in any
// layout.
#include <algorithm>

#include "base/error.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

void run_conv2d(const OpArgs& a) {
  const ir::Layout layout = layout_attr(a.node);
  const Dims4 x = dims4(a.in[0].shape, layout);
  const Dims4 y = dims4(a.out_shape, layout);
  const View& w = a.in[1];  // [O, C/groups, KH, KW] in every layout
  const float* bias = a.in.size() > 2 ? a.in[2].data : nullptr;
  const int64_t groups = a.node.attrs.get_int("groups", 1);
  const auto stride = a.node.attrs.get_ints("stride", {1, 1});
  const auto pad = a.node.attrs.get_ints("pad", {0, 0});
  const auto dilation = a.node.attrs.get_ints("dilation", {1, 1});
  const int64_t kh_size = w.shape[2], kw_size = w.shape[3];
  // nchw16c counts padded lanes in x.c and y.c: the logical counts are the weight's.
  const bool blocked = layout == ir::Layout::nchw16c;
  const int64_t in_channels = blocked ? w.shape[1] * groups : x.c;
  const int64_t out_channels = blocked ? w.shape[0] : y.c;
  const int64_t in_per_group = in_channels / groups;
  const int64_t out_per_group = out_channels / groups;
  CUVIL_CHECK(w.shape[1] == in_per_group, "conv weight does not match groups");
  // Padding lanes of a blocked output are 0 (op.h).
  if (blocked) std::fill(a.out, a.out + ir::num_elements(a.out_shape), 0.0f);

  for (int64_t n = 0; n < y.n; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      const int64_t first_ic = (oc / out_per_group) * in_per_group;
      const float* w_oc = w.data + oc * in_per_group * kh_size * kw_size;
      for (int64_t oh = 0; oh < y.h; ++oh) {
        for (int64_t ow = 0; ow < y.w; ++ow) {
          double acc = bias ? bias[oc] : 0.0;
          for (int64_t icg = 0; icg < in_per_group; ++icg) {
            for (int64_t kh = 0; kh < kh_size; ++kh) {
              const int64_t ih = oh * stride[0] - pad[0] + kh * dilation[0];
              if (ih < 0 || ih >= x.h) continue;  // zero padding
              for (int64_t kw = 0; kw < kw_size; ++kw) {
                const int64_t iw = ow * stride[1] - pad[1] + kw * dilation[1];
                if (iw < 0 || iw >= x.w) continue;
                acc += static_cast<double>(a.in[0].data[x.at(n, first_ic + icg, ih, iw)]) *
                       w_oc[(icg * kh_size + kh) * kw_size + kw];
              }
            }
          }
          a.out[y.at(n, oc, oh, ow)] = static_cast<float>(acc);
        }
      }
    }
  }
}

}  // namespace cuvil::runtime::reference
