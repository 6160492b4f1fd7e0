#include <gtest/gtest.h>

#include "passes/ir/graph.h"
#include "tests/runtime/reference_test_util.h"

namespace cuvil::runtime::reference::testing {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;

TEST(ReferenceLinear, HandDotProductsPlusBias) {
  Graph g;
  ValueId x = g.add_input("x", {2, 3});
  ValueId w = constant(g, "w", Tensor({2, 3}, {1, 0, -1, 2, 2, 2}));  // [out, in]
  ValueId b = constant(g, "b", Tensor({2}, {10, 100}));
  ValueId y = g.add_node(OpKind::linear, {x, w, b});
  const Tensor out = run_one(g, y, {Tensor({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(out.shape, (Shape{2, 2}));
  // row 0: (1 - 3) + 10, 2 * 6 + 100; row 1: (4 - 6) + 10, 2 * 15 + 100
  expect_all_near(out.data, {8, 112, 8, 130}, 0);
}

TEST(ReferenceLinear, LeadingDimensionsAreRows) {
  Graph g;
  const Tensor x = random_tensor({2, 3, 5}, 1);
  const Tensor w = random_tensor({7, 5}, 2);
  ValueId y = g.add_node(OpKind::linear, {g.add_input("x", x.shape), constant(g, "w", w)});
  const Tensor out = run_one(g, y, {x});
  ASSERT_EQ(out.shape, (Shape{2, 3, 7}));
  std::vector<float> expected;
  for (int r = 0; r < 6; ++r)
    for (int n = 0; n < 7; ++n) {
      double s = 0;
      for (int k = 0; k < 5; ++k) s += double(x.data[r * 5 + k]) * w.data[n * 5 + k];
      expected.push_back(static_cast<float>(s));
    }
  expect_all_near(out.data, expected, 1e-5);
}

TEST(ReferenceMatmul, HandComputedProduct) {
  Graph g;
  ValueId a = g.add_input("a", {2, 3});
  ValueId b = g.add_input("b", {3, 2});
  ValueId y = g.add_node(OpKind::matmul, {a, b});
  const Tensor out =
      run_one(g, y, {Tensor({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor({3, 2}, {7, 8, 9, 10, 11, 12})});
  expect_all_near(out.data, {58, 64, 139, 154}, 0);
}

// Plain triple loop for one [m, k] x [k, n] product.
std::vector<double> matmul2d(const float* a, const float* b, int m, int k, int n) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p)
        c[static_cast<size_t>(i * n + j)] += double(a[i * k + p]) * b[p * n + j];
  return c;
}

TEST(ReferenceMatmul, BatchDimensionsBroadcast) {
  // a [2, 1, 3, 4] x b [5, 4, 2] -> [2, 5, 3, 2]: out[i, j] = a[i, 0] @ b[j]
  Graph g;
  const Tensor a = random_tensor({2, 1, 3, 4}, 3);
  const Tensor b = random_tensor({5, 4, 2}, 4);
  ValueId y = g.add_node(OpKind::matmul, {g.add_input("a", a.shape), g.add_input("b", b.shape)});
  const Tensor out = run_one(g, y, {a, b});
  ASSERT_EQ(out.shape, (Shape{2, 5, 3, 2}));
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (double v : matmul2d(a.data.data() + i * 12, b.data.data() + j * 8, 3, 4, 2))
        expected.push_back(static_cast<float>(v));
  expect_all_near(out.data, expected, 1e-5);
}

TEST(ReferenceMatmul, RankTwoRightOperandIsSharedByEveryBatch) {
  Graph g;
  const Tensor a = random_tensor({3, 7, 5}, 5);
  const Tensor b = random_tensor({5, 1}, 6);
  ValueId y = g.add_node(OpKind::matmul, {g.add_input("a", a.shape), constant(g, "b", b)});
  const Tensor out = run_one(g, y, {a});
  ASSERT_EQ(out.shape, (Shape{3, 7, 1}));
  std::vector<float> expected;
  for (int i = 0; i < 3; ++i)
    for (double v : matmul2d(a.data.data() + i * 35, b.data.data(), 7, 5, 1))
      expected.push_back(static_cast<float>(v));
  expect_all_near(out.data, expected, 1e-5);
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
