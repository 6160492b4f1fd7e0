#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/ir/graph.h"
#include "tests/runtime/reference_test_util.h"

namespace cuvil::runtime::reference::testing {
namespace {

using ir::Attrs;
using ir::Graph;
using ir::OpKind;
using ir::ValueId;

TEST(ReferenceConcat, MiddleAxisInterleavesBlocks) {
  Graph g;
  ValueId a = g.add_input("a", {2, 1, 2});
  ValueId b = g.add_input("b", {2, 2, 2});
  ValueId y = g.add_node(OpKind::concat, {a, b}, {{"axis", int64_t{1}}});
  const Tensor out = run_one(g, y, {iota_tensor({2, 1, 2}, 100), iota_tensor({2, 2, 2})});
  ASSERT_EQ(out.shape, (Shape{2, 3, 2}));
  expect_all_near(out.data, {100, 101, 0, 1, 2, 3, 102, 103, 4, 5, 6, 7}, 0);
}

TEST(ReferenceConcat, NegativeAxisMeansLast) {
  Graph g;
  ValueId a = g.add_input("a", {2, 1});
  ValueId b = g.add_input("b", {2, 2});
  ValueId c = g.add_input("c", {2, 1});
  ValueId y = g.add_node(OpKind::concat, {a, b, c}, {{"axis", int64_t{-1}}});
  const Tensor out =
      run_one(g, y, {Tensor({2, 1}, {1, 2}), Tensor({2, 2}, {3, 4, 5, 6}), Tensor({2, 1}, {7, 8})});
  expect_all_near(out.data, {1, 3, 4, 7, 2, 5, 6, 8}, 0);
}

TEST(ReferenceSlice, TakesTheHalfOpenRange) {
  Graph g;
  ValueId y = g.add_node(OpKind::slice, {g.add_input("x", {3, 5})},
                         {{"axis", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{4}}});
  const Tensor out = run_one(g, y, {iota_tensor({3, 5})});
  ASSERT_EQ(out.shape, (Shape{3, 3}));
  expect_all_near(out.data, {1, 2, 3, 6, 7, 8, 11, 12, 13}, 0);
}

TEST(ReferenceSlice, SlicesThenConcatRoundTrip) {
  Graph g;
  const Tensor x = random_tensor({2, 7, 3}, 1);
  ValueId xi = g.add_input("x", x.shape);
  auto part = [&](int64_t s, int64_t e) {
    return g.add_node(OpKind::slice, {xi}, {{"axis", int64_t{1}}, {"start", s}, {"end", e}});
  };
  ValueId y =
      g.add_node(OpKind::concat, {part(0, 2), part(2, 3), part(3, 7)}, {{"axis", int64_t{1}}});
  expect_all_near(run_one(g, y, {x}).data, x.data, 0);
}

TEST(ReferenceReshape, KeepsRowMajorOrderAndInfersMinusOne) {
  Graph g;
  ValueId y = g.add_node(OpKind::reshape, {g.add_input("x", {2, 3, 5})},
                         {{"shape", std::vector<int64_t>{5, -1}}});
  const Tensor x = random_tensor({2, 3, 5}, 2);
  const Tensor out = run_one(g, y, {x});
  ASSERT_EQ(out.shape, (Shape{5, 6}));
  expect_all_near(out.data, x.data, 0);
}

TEST(ReferenceTranspose, MatrixHandValues) {
  Graph g;
  ValueId y = g.add_node(OpKind::transpose, {g.add_input("x", {2, 3})},
                         {{"perm", std::vector<int64_t>{1, 0}}});
  const Tensor out = run_one(g, y, {iota_tensor({2, 3})});
  ASSERT_EQ(out.shape, (Shape{3, 2}));
  expect_all_near(out.data, {0, 3, 1, 4, 2, 5}, 0);
}

TEST(ReferenceTranspose, RankThreeIndexMapping) {
  // out[i, j, k] = x[j, k, i] for perm {2, 0, 1}
  Graph g;
  ValueId y = g.add_node(OpKind::transpose, {g.add_input("x", {2, 3, 5})},
                         {{"perm", std::vector<int64_t>{2, 0, 1}}});
  const Tensor x = random_tensor({2, 3, 5}, 3);
  const Tensor out = run_one(g, y, {x});
  ASSERT_EQ(out.shape, (Shape{5, 2, 3}));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(out.data[(i * 2 + j) * 3 + k], x.data[(j * 3 + k) * 5 + i]);
}

TEST(ReferenceTranspose, NchwToNhwcMatchesTheHandShuffleAndRoundTrips) {
  Graph g;
  const Tensor x = random_tensor({2, 3, 5, 7}, 4);
  ValueId xi = g.add_input("x", x.shape);
  ValueId nhwc = g.add_node(OpKind::transpose, {xi}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  ValueId back =
      g.add_node(OpKind::transpose, {nhwc}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
  g.mark_output(nhwc);
  g.mark_output(back);
  const std::vector<Tensor> out = interpret(g, {x});
  ASSERT_EQ(out.size(), 2u);
  expect_all_near(out[0].data, nchw_to_nhwc(x).data, 0);
  expect_all_near(out[1].data, x.data, 0);
}

Graph embedding_graph(ValueId* out) {
  Graph g;
  ValueId table = constant(g, "table", iota_tensor({4, 3}));
  ValueId ids = g.add_input("ids", {2, 2}, ir::DType::i32);
  *out = g.add_node(OpKind::embedding, {table, ids});
  return g;
}

TEST(ReferenceEmbedding, GathersRowsOfTheTable) {
  ValueId y;
  Graph g = embedding_graph(&y);
  const Tensor out = run_one(g, y, {Tensor({2, 2}, {3, 0, 1, 3}, ir::DType::i32)});
  ASSERT_EQ(out.shape, (Shape{2, 2, 3}));
  expect_all_near(out.data, {9, 10, 11, 0, 1, 2, 3, 4, 5, 9, 10, 11}, 0);
}

TEST(ReferenceEmbedding, IdPastTheVocabularyIsAUserError) {
  ValueId y;
  Graph g = embedding_graph(&y);
  g.mark_output(y);
  EXPECT_THROW(interpret(g, {Tensor({2, 2}, {0, 1, 4, 2}, ir::DType::i32)}), UserError);
}

TEST(ReferenceEmbedding, NegativeOrFractionalIdIsAUserError) {
  ValueId y;
  Graph g = embedding_graph(&y);
  g.mark_output(y);
  EXPECT_THROW(interpret(g, {Tensor({2, 2}, {0, -1, 2, 2}, ir::DType::i32)}), UserError);
  EXPECT_THROW(interpret(g, {Tensor({2, 2}, {0, 1.5f, 2, 2}, ir::DType::i32)}), UserError);
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
