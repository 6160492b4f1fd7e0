#include <gtest/gtest.h>

#include <cmath>

#include "passes/ir/graph.h"
#include "tests/runtime/reference_test_util.h"

namespace cuvil::runtime::reference::testing {
namespace {

using ir::Attrs;
using ir::Graph;
using ir::OpKind;
using ir::ValueId;

Tensor filled(Shape shape, float value) {
  const int64_t n = ir::num_elements(shape);
  return Tensor(std::move(shape), std::vector<float>(static_cast<size_t>(n), value));
}

// Mean and biased variance of the elements at `indices`.
std::pair<double, double> moments(const std::vector<float>& data, const std::vector<int>& indices) {
  double s = 0, sq = 0;
  for (int i : indices) s += data[static_cast<size_t>(i)];
  const double mean = s / static_cast<double>(indices.size());
  for (int i : indices)
    sq += (data[static_cast<size_t>(i)] - mean) * (data[static_cast<size_t>(i)] - mean);
  return {mean, sq / static_cast<double>(indices.size())};
}

TEST(ReferenceLayerNorm, RowsHaveZeroMeanAndUnitVariance) {
  Graph g;
  const Tensor x = random_tensor({3, 17}, 1);
  ValueId y =
      g.add_node(OpKind::layer_norm, {g.add_input("x", x.shape), constant(g, "g", filled({17}, 1)),
                                      constant(g, "b", filled({17}, 0))});
  const Tensor out = run_one(g, y, {x});
  for (int r = 0; r < 3; ++r) {
    std::vector<int> row;
    for (int i = 0; i < 17; ++i) row.push_back(r * 17 + i);
    const auto [mean, var] = moments(out.data, row);
    EXPECT_NEAR(mean, 0.0, 1e-6);
    EXPECT_NEAR(var, 1.0, 1e-4);  // eps = 1e-5 shrinks it slightly
  }
}

TEST(ReferenceLayerNorm, HandValuesWithGammaBetaAndEps) {
  Graph g;
  ValueId y = g.add_node(OpKind::layer_norm,
                         {g.add_input("x", {1, 2}), constant(g, "g", Tensor({2}, {2, 3})),
                          constant(g, "b", Tensor({2}, {10, 20}))},
                         {{"eps", 0.25}});
  const Tensor out = run_one(g, y, {Tensor({1, 2}, {1, 3})});
  // mean 2, variance 1, 1/sqrt(1.25): normalised (-0.894427, 0.894427)
  const double z = 1 / std::sqrt(1.25);
  expect_all_near(out.data, {static_cast<float>(10 - 2 * z), static_cast<float>(20 + 3 * z)}, 1e-6);
}

TEST(ReferenceRmsNorm, HandValues) {
  Graph g;
  ValueId y =
      g.add_node(OpKind::rms_norm,
                 {g.add_input("x", {1, 2}), constant(g, "g", Tensor({2}, {1, 2}))}, {{"eps", 0.0}});
  const Tensor out = run_one(g, y, {Tensor({1, 2}, {3, 4})});
  const double rms = std::sqrt(12.5);
  expect_all_near(out.data, {static_cast<float>(3 / rms), static_cast<float>(8 / rms)}, 1e-6);
}

TEST(ReferenceRmsNorm, RowsHaveUnitRootMeanSquare) {
  Graph g;
  const Tensor x = random_tensor({2, 3, 7}, 2);
  ValueId y =
      g.add_node(OpKind::rms_norm, {g.add_input("x", x.shape), constant(g, "g", filled({7}, 1))});
  const Tensor out = run_one(g, y, {x});
  for (int r = 0; r < 6; ++r) {
    double sq = 0;
    for (int i = 0; i < 7; ++i) sq += double(out.data[r * 7 + i]) * out.data[r * 7 + i];
    EXPECT_NEAR(sq / 7, 1.0, 1e-4);
  }
}

Tensor run_group_norm(const Tensor& x, int64_t groups, const char* layout) {
  const int64_t c = std::string(layout) == "nhwc" ? x.shape[3] : x.shape[1];
  Graph g;
  ValueId y = g.add_node(OpKind::group_norm,
                         {g.add_input("x", x.shape), constant(g, "g", filled({c}, 1)),
                          constant(g, "b", filled({c}, 0))},
                         {{"groups", groups}, {"layout", std::string(layout)}});
  return run_one(g, y, {x});
}

TEST(ReferenceGroupNorm, EachGroupHasZeroMeanAndUnitVariance) {
  const Tensor x = random_tensor({2, 6, 3, 5}, 3);
  const Tensor out = run_group_norm(x, 3, "nchw");
  for (int n = 0; n < 2; ++n)
    for (int grp = 0; grp < 3; ++grp) {
      std::vector<int> idx;  // channels 2*grp, 2*grp+1, all 15 pixels each
      for (int i = 0; i < 30; ++i) idx.push_back(n * 90 + grp * 30 + i);
      const auto [mean, var] = moments(out.data, idx);
      EXPECT_NEAR(mean, 0.0, 1e-6);
      EXPECT_NEAR(var, 1.0, 1e-3);
    }
}

TEST(ReferenceGroupNorm, NhwcGivesTheSameNumbersAsNchw) {
  const Tensor x = random_tensor({1, 4, 3, 7}, 4);
  const Tensor ref = run_group_norm(x, 2, "nchw");
  const Tensor out = run_group_norm(nchw_to_nhwc(x), 2, "nhwc");
  expect_all_near(nhwc_to_nchw(out).data, ref.data, 1e-6);
}

Tensor run_batch_norm(const Tensor& x, const char* layout) {
  Graph g;
  ValueId y = g.add_node(
      OpKind::batch_norm,
      {g.add_input("x", x.shape), constant(g, "scale", Tensor({2}, {2, -1})),
       constant(g, "bias", Tensor({2}, {1, 0.5f})), constant(g, "mean", Tensor({2}, {3, -2})),
       constant(g, "var", Tensor({2}, {4, 0.25f}))},
      {{"eps", 0.0}, {"layout", std::string(layout)}});
  return run_one(g, y, {x});
}

TEST(ReferenceBatchNorm, UsesRunningStatisticsPerChannel) {
  const Tensor x = random_tensor({2, 2, 3, 1}, 5);
  const Tensor out = run_batch_norm(x, "nchw");
  for (int n = 0; n < 2; ++n)
    for (int p = 0; p < 3; ++p) {
      const int i0 = n * 6 + p, i1 = n * 6 + 3 + p;
      EXPECT_NEAR(out.data[i0], (x.data[i0] - 3) / 2.0 * 2 + 1, 1e-6);
      EXPECT_NEAR(out.data[i1], (x.data[i1] + 2) / 0.5 * -1 + 0.5, 1e-6);
    }
}

TEST(ReferenceBatchNorm, NhwcGivesTheSameNumbersAsNchw) {
  const Tensor x = random_tensor({3, 2, 5, 3}, 6);
  const Tensor ref = run_batch_norm(x, "nchw");
  const Tensor out = run_batch_norm(nchw_to_nhwc(x), "nhwc");
  expect_all_near(nhwc_to_nchw(out).data, ref.data, 0);
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
