// The reference interpreter on blocked nchw16c activations: conv2d and pooling give what they
// give on NCHW, padding lanes are never read, and conv output padding lanes are 0.
#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <string>
#include <vector>

#include "passes/ir/graph.h"
#include "tests/runtime/reference_test_util.h"

namespace cuvil::runtime::reference::testing {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using Ints = std::vector<int64_t>;

struct ConvShape {
  int64_t n, c, h, w, o, k, stride, pad;
};

// The same conv in `layout` ("nchw" or "nchw16c") on x (NCHW), result back in NCHW.
Tensor conv_in(const std::string& layout, const ConvShape& s, const Tensor& x, float pad_lanes) {
  Graph g;
  const bool blocked = layout == "nchw16c";
  const Tensor xin = blocked ? nchw_to_nchw16c(x, pad_lanes) : x;
  const ValueId in = g.add_input("x", xin.shape);
  const ValueId w = constant(g, "w", random_tensor({s.o, s.c, s.k, s.k}, 5));
  const ValueId b = constant(g, "b", random_tensor({s.o}, 6));
  const ValueId y = g.add_node(
      OpKind::conv2d, {in, w, b},
      {{"stride", Ints{s.stride, s.stride}}, {"pad", Ints{s.pad, s.pad}}, {"layout", layout}});
  const Tensor out = run_one(g, y, {xin});
  return blocked ? nchw16c_to_nchw(out, s.o) : out;
}

TEST(ReferenceNchw16c, ConvMatchesNchwAtOddChannelCounts) {
  for (const ConvShape& s :
       {ConvShape{1, 3, 7, 7, 17, 3, 1, 1}, ConvShape{2, 17, 5, 4, 1, 1, 1, 0},
        ConvShape{1, 1, 9, 9, 33, 7, 2, 3}, ConvShape{1, 32, 4, 4, 16, 3, 2, 1}}) {
    const Tensor x = random_tensor({s.n, s.c, s.h, s.w}, 4);
    const Tensor want = conv_in("nchw", s, x, 0.0f);
    expect_all_near(conv_in("nchw16c", s, x, 0.0f).data, want.data, 1e-5);
  }
}

TEST(ReferenceNchw16c, ConvNeverReadsInputPaddingLanes) {
  const ConvShape s{1, 7, 5, 5, 9, 3, 1, 1};
  const Tensor x = random_tensor({s.n, s.c, s.h, s.w}, 4);
  const Tensor want = conv_in("nchw", s, x, 0.0f);
  expect_all_near(conv_in("nchw16c", s, x, std::numeric_limits<float>::quiet_NaN()).data, want.data,
                  1e-5);
}

TEST(ReferenceNchw16c, ConvOutputPaddingLanesAreZero) {
  Graph g;
  const ValueId in = g.add_input("x", {1, 1, 3, 3, 16});
  const ValueId w = constant(g, "w", random_tensor({5, 16, 1, 1}, 5));
  const ValueId b = constant(g, "b", random_tensor({5}, 6));
  const ValueId y = g.add_node(OpKind::conv2d, {in, w, b}, {{"layout", std::string("nchw16c")}});
  const Tensor out = run_one(g, y, {random_tensor({1, 1, 3, 3, 16}, 7)});
  for (size_t i = 0; i < out.data.size(); ++i) {
    if (i % 16 >= 5) {
      EXPECT_EQ(out.data[i], 0.0f) << i;
    }
  }
}

TEST(ReferenceNchw16c, PoolingMatchesNchw) {
  for (OpKind op : {OpKind::max_pool2d, OpKind::avg_pool2d}) {
    const Tensor x = random_tensor({2, 19, 7, 6}, 8);
    auto pool = [&](const std::string& layout, const Tensor& input) {
      Graph g;
      const ValueId in = g.add_input("x", input.shape);
      const ValueId y = g.add_node(op, {in},
                                   {{"kernel", Ints{3, 3}},
                                    {"stride", Ints{2, 2}},
                                    {"pad", Ints{1, 1}},
                                    {"layout", layout}});
      return run_one(g, y, {input});
    };
    const Tensor want = pool("nchw", x);
    expect_all_near(nchw16c_to_nchw(pool("nchw16c", nchw_to_nchw16c(x)), 19).data, want.data, 1e-6);
  }
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
