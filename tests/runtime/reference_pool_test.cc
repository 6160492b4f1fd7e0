#include <gtest/gtest.h>

#include <algorithm>

#include "passes/ir/graph.h"
#include "tests/runtime/reference_test_util.h"

namespace cuvil::runtime::reference::testing {
namespace {

using ir::Attrs;
using ir::Graph;
using ir::OpKind;
using ir::ValueId;

Attrs window(int64_t k, int64_t s, int64_t p, const char* layout = "nchw") {
  return {{"kernel", std::vector<int64_t>{k, k}},
          {"stride", std::vector<int64_t>{s, s}},
          {"pad", std::vector<int64_t>{p, p}},
          {"layout", std::string(layout)}};
}

Tensor run_op(OpKind op, const Tensor& x, Attrs attrs) {
  Graph g;
  ValueId y = g.add_node(op, {g.add_input("x", x.shape)}, std::move(attrs));
  return run_one(g, y, {x});
}

TEST(ReferencePool, MaxPoolOddSizeTakesTheWindowsLastValidElement) {
  // x[h][w] = 7h + w grows along both axes, so each window's max is its bottom-right valid element.
  const Tensor out = run_op(OpKind::max_pool2d, iota_tensor({1, 1, 7, 7}), window(3, 2, 1));
  ASSERT_EQ(out.shape, (Shape{1, 1, 4, 4}));
  for (int oh = 0; oh < 4; ++oh)
    for (int ow = 0; ow < 4; ++ow)
      EXPECT_EQ(out.data[oh * 4 + ow], 7 * std::min(2 * oh + 1, 6) + std::min(2 * ow + 1, 6));
}

TEST(ReferencePool, MaxPoolNeverPicksPadding) {
  const Tensor x = Tensor({1, 1, 2, 2}, {-4, -3, -2, -1});
  const Tensor out = run_op(OpKind::max_pool2d, x, window(3, 1, 1));
  expect_all_near(out.data, {-1, -1, -1, -1}, 0);  // zero padding would have given 0
}

TEST(ReferencePool, AvgPoolCountsPaddedPositions) {
  const Tensor ones = Tensor({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  const Tensor out = run_op(OpKind::avg_pool2d, ones, window(3, 1, 1));
  const float c = 4 / 9.0f, e = 6 / 9.0f;
  expect_all_near(out.data, {c, e, c, e, 1, e, c, e, c}, 1e-7);
}

TEST(ReferencePool, AvgPoolOddSizeDropsTheRemainder) {
  const Tensor out = run_op(OpKind::avg_pool2d, iota_tensor({1, 1, 7, 7}), window(2, 2, 0));
  ASSERT_EQ(out.shape, (Shape{1, 1, 3, 3}));
  for (int oh = 0; oh < 3; ++oh)
    for (int ow = 0; ow < 3; ++ow) {
      const float top_left = 7.0f * 2 * oh + 2 * ow;
      EXPECT_FLOAT_EQ(out.data[oh * 3 + ow], top_left + 4.0f);  // mean of tl, tl+1, tl+7, tl+8
    }
}

TEST(ReferencePool, NhwcPoolsGiveTheSameNumbersAsNchw) {
  const Tensor x = random_tensor({2, 3, 7, 5}, 1);
  for (OpKind op : {OpKind::max_pool2d, OpKind::avg_pool2d}) {
    const Tensor ref = run_op(op, x, window(3, 2, 1));
    const Tensor out = run_op(op, nchw_to_nhwc(x), window(3, 2, 1, "nhwc"));
    expect_all_near(nhwc_to_nchw(out).data, ref.data, 0);
  }
}

TEST(ReferencePool, GlobalAvgPoolMeansEachChannel) {
  const Tensor x = random_tensor({2, 3, 5, 7}, 2);
  const Tensor out = run_op(OpKind::global_avg_pool, x, {});
  ASSERT_EQ(out.shape, (Shape{2, 3}));
  for (int nc = 0; nc < 6; ++nc) {
    double s = 0;
    for (int i = 0; i < 35; ++i) s += x.data[nc * 35 + i];
    EXPECT_NEAR(out.data[nc], s / 35, 1e-6);
  }
  const Tensor nhwc =
      run_op(OpKind::global_avg_pool, nchw_to_nhwc(x), {{"layout", std::string("nhwc")}});
  expect_all_near(nhwc.data, out.data, 1e-6);
}

TEST(ReferenceUpsample, NearestRepeatsEachPixel) {
  const Tensor out = run_op(OpKind::upsample_nearest2d, Tensor({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6}),
                            {{"scale", int64_t{2}}});
  ASSERT_EQ(out.shape, (Shape{1, 1, 4, 6}));
  expect_all_near(out.data, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3,  //
                             4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6},
                  0);
}

TEST(ReferenceUpsample, NhwcScaleThreeMatchesNchw) {
  const Tensor x = random_tensor({1, 2, 3, 1}, 3);
  const Tensor ref = run_op(OpKind::upsample_nearest2d, x, {{"scale", int64_t{3}}});
  ASSERT_EQ(ref.shape, (Shape{1, 2, 9, 3}));
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 9; ++h)
      for (int w = 0; w < 3; ++w) EXPECT_EQ(ref.data[(c * 9 + h) * 3 + w], x.data[c * 3 + h / 3]);
  const Tensor out = run_op(OpKind::upsample_nearest2d, nchw_to_nhwc(x),
                            {{"scale", int64_t{3}}, {"layout", std::string("nhwc")}});
  expect_all_near(nhwc_to_nchw(out).data, ref.data, 0);
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
