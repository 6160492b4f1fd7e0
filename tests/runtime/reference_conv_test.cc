#include <gtest/gtest.h>

#include "passes/ir/graph.h"
#include "tests/runtime/reference_test_util.h"

namespace cuvil::runtime::reference::testing {
namespace {

using ir::Attrs;
using ir::Graph;
using ir::OpKind;
using ir::ValueId;

// 2-D cross-correlation of one plane with one kernel, zero padding, written out plainly.
std::vector<double> correlate(const float* plane, int64_t h, int64_t w, const float* kernel,
                              int64_t kh, int64_t kw, int64_t stride, int64_t pad) {
  const int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (w + 2 * pad - kw) / stride + 1;
  std::vector<double> out(static_cast<size_t>(oh * ow), 0.0);
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          const int64_t r = y * stride + i - pad, c = x * stride + j - pad;
          if (r >= 0 && r < h && c >= 0 && c < w)
            out[static_cast<size_t>(y * ow + x)] += plane[r * w + c] * kernel[i * kw + j];
        }
  return out;
}

// Expected grouped conv (N = 1, NCHW) as sums of single-plane correlations.
std::vector<float> expected_conv(const Tensor& x, const Tensor& wt, int64_t groups, int64_t stride,
                                 int64_t pad) {
  const int64_t c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t o = wt.shape[0], cg = wt.shape[1], kh = wt.shape[2], kw = wt.shape[3];
  const int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (w + 2 * pad - kw) / stride + 1;
  std::vector<float> out;
  for (int64_t oc = 0; oc < o; ++oc) {
    std::vector<double> acc(static_cast<size_t>(oh * ow), 0.0);
    const int64_t group = oc / (o / groups);
    for (int64_t j = 0; j < cg; ++j) {
      const int64_t ic = group * (c / groups) + j;
      const auto part = correlate(x.data.data() + ic * h * w, h, w,
                                  wt.data.data() + (oc * cg + j) * kh * kw, kh, kw, stride, pad);
      for (size_t i = 0; i < acc.size(); ++i) acc[i] += part[i];
    }
    for (double v : acc) out.push_back(static_cast<float>(v));
  }
  return out;
}

Attrs conv_attrs(int64_t stride, int64_t pad, int64_t groups, const char* layout = "nchw") {
  return {{"stride", std::vector<int64_t>{stride, stride}},
          {"pad", std::vector<int64_t>{pad, pad}},
          {"groups", groups},
          {"layout", std::string(layout)}};
}

TEST(ReferenceConv, OneByOneEqualsMatmulOverChannels) {
  Graph g;
  const Tensor x = random_tensor({1, 5, 3, 7}, 1);
  const Tensor w = random_tensor({4, 5, 1, 1}, 2);
  ValueId xi = g.add_input("x", x.shape);
  ValueId y = g.add_node(OpKind::conv2d, {xi, constant(g, "w", w)});
  const Tensor out = run_one(g, y, {x});
  ASSERT_EQ(out.shape, (Shape{1, 4, 3, 7}));
  std::vector<float> expected;
  for (int o = 0; o < 4; ++o)
    for (int p = 0; p < 21; ++p) {
      double s = 0;
      for (int c = 0; c < 5; ++c) s += double(w.data[o * 5 + c]) * x.data[c * 21 + p];
      expected.push_back(static_cast<float>(s));
    }
  expect_all_near(out.data, expected, 1e-5);
}

TEST(ReferenceConv, ThreeByThreeOnesWithPaddingSumsNeighbourhoods) {
  Graph g;
  ValueId xi = g.add_input("x", {1, 1, 3, 3});
  ValueId w = constant(g, "w", Tensor({1, 1, 3, 3}, std::vector<float>(9, 1.0f)));
  ValueId y = g.add_node(OpKind::conv2d, {xi, w}, conv_attrs(1, 1, 1));
  const Tensor out = run_one(g, y, {iota_tensor({1, 1, 3, 3}, 1.0f)});
  expect_all_near(out.data, {12, 21, 16, 27, 45, 33, 24, 39, 28}, 0);
}

TEST(ReferenceConv, SobelKernelWithoutPaddingHandValue) {
  Graph g;
  ValueId xi = g.add_input("x", {1, 1, 3, 3});
  ValueId w = constant(g, "w", Tensor({1, 1, 3, 3}, {1, 0, -1, 2, 0, -2, 1, 0, -1}));
  ValueId y = g.add_node(OpKind::conv2d, {xi, w});
  const Tensor out = run_one(g, y, {iota_tensor({1, 1, 3, 3}, 1.0f)});
  ASSERT_EQ(out.shape, (Shape{1, 1, 1, 1}));
  EXPECT_EQ(out.data[0], -8.0f);  // (1-3) + 2(4-6) + (7-9)
}

TEST(ReferenceConv, BiasIsAddedPerOutputChannel) {
  Graph g;
  ValueId xi = g.add_input("x", {1, 2, 3, 3});
  ValueId w = constant(g, "w", Tensor({3, 2, 1, 1}, std::vector<float>(6, 0.0f)));
  ValueId b = constant(g, "b", Tensor({3}, {0.5f, -1.0f, 7.0f}));
  ValueId y = g.add_node(OpKind::conv2d, {xi, w, b});
  const Tensor out = run_one(g, y, {random_tensor({1, 2, 3, 3}, 3)});
  for (int o = 0; o < 3; ++o)
    for (int p = 0; p < 9; ++p)
      EXPECT_EQ(out.data[o * 9 + p], (std::vector<float>{0.5f, -1.0f, 7.0f}[o]));
}

TEST(ReferenceConv, DepthwiseGroupsConvolveEachChannelAlone) {
  Graph g;
  const Tensor x = random_tensor({1, 3, 7, 7}, 4);
  const Tensor w = random_tensor({3, 1, 3, 3}, 5);
  ValueId xi = g.add_input("x", x.shape);
  ValueId y = g.add_node(OpKind::conv2d, {xi, constant(g, "w", w)}, conv_attrs(1, 1, 3));
  const Tensor out = run_one(g, y, {x});
  std::vector<float> expected;
  for (int c = 0; c < 3; ++c) {
    for (double v : correlate(x.data.data() + c * 49, 7, 7, w.data.data() + c * 9, 3, 3, 1, 1))
      expected.push_back(static_cast<float>(v));
  }
  expect_all_near(out.data, expected, 1e-5);
}

TEST(ReferenceConv, TwoGroupsUseOnlyTheirHalfOfTheChannels) {
  Graph g;
  const Tensor x = random_tensor({1, 4, 5, 5}, 6);
  const Tensor w = random_tensor({6, 2, 3, 3}, 7);
  ValueId xi = g.add_input("x", x.shape);
  ValueId y = g.add_node(OpKind::conv2d, {xi, constant(g, "w", w)}, conv_attrs(1, 0, 2));
  const Tensor out = run_one(g, y, {x});
  expect_all_near(out.data, expected_conv(x, w, 2, 1, 0), 1e-5);
}

TEST(ReferenceConv, StrideTwoPadOneAtSizeSeven) {
  Graph g;
  const Tensor x = random_tensor({1, 2, 7, 7}, 8);
  const Tensor w = random_tensor({3, 2, 3, 3}, 9);
  ValueId xi = g.add_input("x", x.shape);
  ValueId y = g.add_node(OpKind::conv2d, {xi, constant(g, "w", w)}, conv_attrs(2, 1, 1));
  const Tensor out = run_one(g, y, {x});
  ASSERT_EQ(out.shape, (Shape{1, 3, 4, 4}));
  expect_all_near(out.data, expected_conv(x, w, 1, 2, 1), 1e-5);
}

TEST(ReferenceConv, StrideTwoPadOneAtSizeSeventeen) {
  Graph g;
  const Tensor x = random_tensor({1, 3, 17, 17}, 10);
  const Tensor w = random_tensor({2, 3, 3, 3}, 11);
  ValueId xi = g.add_input("x", x.shape);
  ValueId y = g.add_node(OpKind::conv2d, {xi, constant(g, "w", w)}, conv_attrs(2, 1, 1));
  const Tensor out = run_one(g, y, {x});
  ASSERT_EQ(out.shape, (Shape{1, 2, 9, 9}));
  expect_all_near(out.data, expected_conv(x, w, 1, 2, 1), 1e-5);
}

// A kernel dilated {dh, dw} is the undilated kernel of size (d * (k - 1) + 1) with zeros between
// its taps.
TEST(ReferenceConv, DilationEqualsAKernelWithZerosBetweenTaps) {
  const Tensor x = random_tensor({1, 4, 17, 13}, 15);
  const Tensor w = random_tensor({4, 2, 3, 3}, 16);
  const int64_t dh = 2, dw = 3, kh = 2 * 2 + 1, kw = 3 * 2 + 1;
  Tensor sparse({4, 2, kh, kw}, std::vector<float>(static_cast<size_t>(4 * 2 * kh * kw), 0.0f));
  for (int64_t o = 0; o < 4 * 2; ++o)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j)
        sparse.data[static_cast<size_t>((o * kh + i * dh) * kw + j * dw)] =
            w.data[static_cast<size_t>((o * 3 + i) * 3 + j)];
  Graph g;
  Attrs a = conv_attrs(2, 3, 2);
  a.set("dilation", std::vector<int64_t>{dh, dw});
  ValueId y = g.add_node(OpKind::conv2d, {g.add_input("x", x.shape), constant(g, "w", w)}, a);
  const Tensor out = run_one(g, y, {x});
  ASSERT_EQ(out.shape, (Shape{1, 4, 10, 7}));
  expect_all_near(out.data, expected_conv(x, sparse, 2, 2, 3), 1e-5);
}

TEST(ReferenceConv, NhwcGivesTheSameNumbersAsNchw) {
  const Tensor x = random_tensor({2, 4, 7, 5}, 12);
  const Tensor w = random_tensor({6, 2, 3, 3}, 13);
  const Tensor b = random_tensor({6}, 14);
  Graph nchw;
  ValueId y1 =
      nchw.add_node(OpKind::conv2d,
                    {nchw.add_input("x", x.shape), constant(nchw, "w", w), constant(nchw, "b", b)},
                    conv_attrs(2, 1, 2));
  const Tensor ref = run_one(nchw, y1, {x});
  Graph nhwc;
  const Tensor xt = nchw_to_nhwc(x);
  ValueId y2 =
      nhwc.add_node(OpKind::conv2d,
                    {nhwc.add_input("x", xt.shape), constant(nhwc, "w", w), constant(nhwc, "b", b)},
                    conv_attrs(2, 1, 2, "nhwc"));
  const Tensor out = run_one(nhwc, y2, {xt});
  ASSERT_EQ(out.shape, (Shape{2, 4, 3, 6}));
  expect_all_near(nhwc_to_nchw(out).data, ref.data, 0);
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
