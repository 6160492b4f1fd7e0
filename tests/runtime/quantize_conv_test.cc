// im2col_khwc (runtime/cpu/quantize_conv.h), the column buffer of the int8 convolutions and of
// the bf16 ones where they do not gather in place: every element is the tap's input value, or
// `pad` where the tap falls in the padding, for u8 and fp32, at odd sizes, strides and paddings
// (wider than the image too), in pixel blocks that start mid-row, written in two thread parts.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cpu/quantize_conv.h"

namespace cuvil::runtime::cpu {
namespace {

LowpConv geometry(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t stride,
                  int64_t pad) {
  LowpConv g;
  g.nhwc = true;
  g.n = n, g.c = c, g.h = h, g.w = w;
  g.o = 1, g.kh = k, g.kw = k;
  g.sh = g.sw = stride;
  g.ph = g.pw = pad;
  g.oh = (h + 2 * pad - k) / stride + 1;
  g.ow = (w + 2 * pad - k) / stride + 1;
  g.cg = c, g.og = 1;
  return g;
}

// The definition, one tap at a time.
template <class T>
T tap(const LowpConv& g, const std::vector<T>& x, int64_t img, int64_t pixel, int64_t k, T pad) {
  const int64_t oy = pixel / g.ow, ox = pixel % g.ow;
  const int64_t ch = k % g.c, kj = (k / g.c) % g.kw, ki = k / (g.c * g.kw);
  const int64_t iy = oy * g.sh - g.ph + ki, ix = ox * g.sw - g.pw + kj;
  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) return pad;
  return x[static_cast<size_t>(((img * g.h + iy) * g.w + ix) * g.c + ch)];
}

template <class T>
void expect_columns_of_the_definition(const LowpConv& g, T pad) {
  std::vector<T> x(static_cast<size_t>(g.n * g.h * g.w * g.c));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(1 + i % 251);  // never `pad`
  const int64_t ohw = g.oh * g.ow, k = g.k(), ldcol = k + 3;
  const std::string where = "c=" + std::to_string(g.c) + " h=" + std::to_string(g.h) +
                            " w=" + std::to_string(g.w) + " k=" + std::to_string(g.kh) +
                            " s=" + std::to_string(g.sh) + " p=" + std::to_string(g.ph);
  for (int64_t img = 0; img < g.n; ++img) {
    for (int64_t block : {ohw, int64_t{5}}) {  // the whole image, or blocks of 5 pixels
      for (int64_t p0 = 0; p0 < ohw; p0 += block) {
        const int64_t np = std::min(block, ohw - p0);
        std::vector<T> col(static_cast<size_t>(np * ldcol), T{77});
        const int64_t half = np / 2;
        im2col_khwc<T>(g, x.data(), img, p0, np, pad, col.data(), ldcol, 0, half);
        im2col_khwc<T>(g, x.data(), img, p0, np, pad, col.data(), ldcol, half, np);
        for (int64_t p = 0; p < np; ++p) {
          for (int64_t e = 0; e < k; ++e) {
            ASSERT_EQ(col[static_cast<size_t>(p * ldcol + e)], tap(g, x, img, p0 + p, e, pad))
                << where << " image " << img << " pixel " << p0 + p << " element " << e;
          }
          for (int64_t e = k; e < ldcol; ++e)  // the row's stride past K: untouched
            ASSERT_EQ(col[static_cast<size_t>(p * ldcol + e)], T{77}) << where;
        }
      }
    }
  }
}

TEST(Im2colKhwc, EveryElementIsItsTapOrThePadding) {
  for (int64_t c : {1, 3, 17}) {
    for (int64_t hw : {1, 3, 7}) {
      for (int64_t k : {1, 3, 5, 7}) {
        for (int64_t stride : {1, 2, 3}) {
          for (int64_t pad : {0, 1, 3}) {
            if (hw + 2 * pad < k) continue;  // no output pixel
            const LowpConv g = geometry(2, c, hw, hw + 2, k, stride, pad);
            expect_columns_of_the_definition<uint8_t>(g, uint8_t{128});
            expect_columns_of_the_definition<float>(g, 0.0f);
          }
        }
      }
    }
  }
}

// ResNet's stem, at a small image: 3 channels, 7x7, stride 2, padding 3.
TEST(Im2colKhwc, AStem) {
  expect_columns_of_the_definition<uint8_t>(geometry(1, 3, 17, 17, 7, 2, 3), uint8_t{0});
}

}  // namespace
}  // namespace cuvil::runtime::cpu
