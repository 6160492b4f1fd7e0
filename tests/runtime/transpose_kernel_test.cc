// transpose.cpu against the reference interpreter: each of its paths (few rows interleaved, 2-D
// and batched 32 x 32 tiles, the general strided copy) at odd sizes, one and two threads.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernel_reference_util.h"
#include "passes/ir/graph.h"

namespace cuvil::runtime {
namespace {

using ir::Shape;
using testing::kernel_error;

double transpose_error(const Shape& x, const std::vector<int64_t>& perm, int threads) {
  ir::Graph g;
  g.mark_output(g.add_node(ir::OpKind::transpose, {g.add_input("x", x)}, {{"perm", perm}}));
  return kernel_error(g, "transpose.cpu", threads);
}

// An image's 1-5 channels to NHWC: 2-4 take the interleaving path, 5 the tiles, 1 a copy.
TEST(TransposeKernel, FewChannelsToNhwcOddSizes) {
  for (int64_t c : {1, 2, 3, 4, 5}) {
    for (int64_t hw : {1, 3, 7, 17, 67}) {
      for (int threads : {1, 2}) {
        EXPECT_EQ(transpose_error({2, c, hw, hw + 2}, {0, 2, 3, 1}, threads), 0.0)
            << c << " channels, " << hw << "x" << hw + 2 << ", " << threads << " threads";
        EXPECT_EQ(transpose_error({1, c, hw, 3}, {0, 2, 3, 1}, threads), 0.0)
            << c << " channels, batch 1, " << hw << "x3";
      }
    }
  }
}

// Back to NCHW (many rows of a few columns), a plain matrix and a rank-4 permutation with no
// matrix form.
TEST(TransposeKernel, OtherPathsOddSizes) {
  for (int threads : {1, 2}) {
    EXPECT_EQ(transpose_error({2, 7, 17, 3}, {0, 3, 1, 2}, threads), 0.0);
    EXPECT_EQ(transpose_error({3, 4099}, {1, 0}, threads), 0.0);
    EXPECT_EQ(transpose_error({4099, 3}, {1, 0}, threads), 0.0);
    EXPECT_EQ(transpose_error({33, 65}, {1, 0}, threads), 0.0);
    EXPECT_EQ(transpose_error({3, 5, 7, 2}, {2, 0, 3, 1}, threads), 0.0);
  }
}

}  // namespace
}  // namespace cuvil::runtime
