// Spatial pooling (max, average, global average) and nearest-neighbour upsampling.
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

namespace {

struct Window {
  int64_t kh, kw, sh, sw, ph, pw;
};

Window window_attrs(const ir::Node& node) {
  const auto k = node.attrs.get_ints("kernel", {1, 1});
  const auto s = node.attrs.get_ints("stride", {1, 1});
  const auto p = node.attrs.get_ints("pad", {0, 0});
  return {k[0], k[1], s[0], s[1], p[0], p[1]};
}

}  // namespace

// Padding never wins a max: padded positions are skipped (as if -inf).
void run_max_pool2d(const OpArgs& a) {
  const ir::Layout layout = layout_attr(a.node);
  const Dims4 x = dims4(a.in[0].shape, layout);
  const Dims4 y = dims4(a.out_shape, layout);
  const Window win = window_attrs(a.node);
  for (int64_t n = 0; n < y.n; ++n) {
    for (int64_t c = 0; c < y.c; ++c) {
      for (int64_t oh = 0; oh < y.h; ++oh) {
        for (int64_t ow = 0; ow < y.w; ++ow) {
          float best = -std::numeric_limits<float>::infinity();
          for (int64_t kh = 0; kh < win.kh; ++kh) {
            const int64_t ih = oh * win.sh - win.ph + kh;
            if (ih < 0 || ih >= x.h) continue;
            for (int64_t kw = 0; kw < win.kw; ++kw) {
              const int64_t iw = ow * win.sw - win.pw + kw;
              if (iw < 0 || iw >= x.w) continue;
              const float v = a.in[0].data[x.at(n, c, ih, iw)];
              if (v > best || std::isnan(v)) best = v;  // NaN propagates, as in PyTorch
            }
          }
          a.out[y.at(n, c, oh, ow)] = best;
        }
      }
    }
  }
}

// count_include_pad 1 (default): the divisor is the full window, padded zeros included; 0: the
// window's taps inside the input.
void run_avg_pool2d(const OpArgs& a) {
  const ir::Layout layout = layout_attr(a.node);
  const Dims4 x = dims4(a.in[0].shape, layout);
  const Dims4 y = dims4(a.out_shape, layout);
  const Window win = window_attrs(a.node);
  const bool include_pad = a.node.attrs.get_int("count_include_pad", 1) != 0;
  for (int64_t n = 0; n < y.n; ++n) {
    for (int64_t c = 0; c < y.c; ++c) {
      for (int64_t oh = 0; oh < y.h; ++oh) {
        for (int64_t ow = 0; ow < y.w; ++ow) {
          double sum = 0.0;
          int64_t taps = 0;
          for (int64_t kh = 0; kh < win.kh; ++kh) {
            const int64_t ih = oh * win.sh - win.ph + kh;
            if (ih < 0 || ih >= x.h) continue;
            for (int64_t kw = 0; kw < win.kw; ++kw) {
              const int64_t iw = ow * win.sw - win.pw + kw;
              if (iw < 0 || iw >= x.w) continue;
              sum += a.in[0].data[x.at(n, c, ih, iw)];
              ++taps;
            }
          }
          const double divisor = include_pad ? static_cast<double>(win.kh * win.kw)
                                             : static_cast<double>(std::max<int64_t>(taps, 1));
          a.out[y.at(n, c, oh, ow)] = static_cast<float>(sum / divisor);
        }
      }
    }
  }
}

void run_global_avg_pool(const OpArgs& a) {
  const Dims4 x = dims4(a.in[0].shape, layout_attr(a.node));
  for (int64_t n = 0; n < x.n; ++n) {
    for (int64_t c = 0; c < x.c; ++c) {
      double sum = 0.0;
      for (int64_t h = 0; h < x.h; ++h) {
        for (int64_t w = 0; w < x.w; ++w) sum += a.in[0].data[x.at(n, c, h, w)];
      }
      a.out[n * x.c + c] = static_cast<float>(sum / static_cast<double>(x.h * x.w));
    }
  }
}

void run_upsample_nearest2d(const OpArgs& a) {
  const ir::Layout layout = layout_attr(a.node);
  const Dims4 x = dims4(a.in[0].shape, layout);
  const Dims4 y = dims4(a.out_shape, layout);
  const int64_t scale = a.node.attrs.get_int("scale", 2);
  for (int64_t n = 0; n < y.n; ++n) {
    for (int64_t c = 0; c < y.c; ++c) {
      for (int64_t oh = 0; oh < y.h; ++oh) {
        for (int64_t ow = 0; ow < y.w; ++ow) {
          a.out[y.at(n, c, oh, ow)] = a.in[0].data[x.at(n, c, oh / scale, ow / scale)];
        }
      }
    }
  }
}

}  // namespace cuvil::runtime::reference
