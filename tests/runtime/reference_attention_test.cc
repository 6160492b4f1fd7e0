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

TEST(ReferenceSoftmax, KnownValues) {
  Graph g;
  ValueId y = g.add_node(OpKind::softmax, {g.add_input("x", {1, 3})});
  const Tensor out = run_one(g, y, {Tensor({1, 3}, {0.0f, std::log(2.0f), std::log(3.0f)})});
  expect_all_near(out.data, {1 / 6.0f, 2 / 6.0f, 3 / 6.0f}, 1e-7);
}

TEST(ReferenceSoftmax, LastAxisRowsSumToOne) {
  Graph g;
  ValueId y = g.add_node(OpKind::softmax, {g.add_input("x", {3, 7})});
  const Tensor out = run_one(g, y, {random_tensor({3, 7}, 1)});
  for (int r = 0; r < 3; ++r) {
    double s = 0;
    for (int j = 0; j < 7; ++j) {
      EXPECT_GT(out.data[r * 7 + j], 0.0f);
      s += out.data[r * 7 + j];
    }
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
}

TEST(ReferenceSoftmax, MiddleAxisNormalisesColumnsOfThatAxis) {
  Graph g;
  const Tensor x = random_tensor({2, 5, 3}, 2);
  ValueId y = g.add_node(OpKind::softmax, {g.add_input("x", x.shape)}, {{"axis", int64_t{1}}});
  const Tensor out = run_one(g, y, {x});
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 3; ++c) {
      double denom = 0;
      for (int j = 0; j < 5; ++j) denom += std::exp(double(x.data[(a * 5 + j) * 3 + c]));
      for (int j = 0; j < 5; ++j) {
        const int i = (a * 5 + j) * 3 + c;
        EXPECT_NEAR(out.data[i], std::exp(double(x.data[i])) / denom, 1e-6);
      }
    }
}

TEST(ReferenceSoftmax, LargeLogitsDoNotOverflow) {
  Graph g;
  ValueId y = g.add_node(OpKind::softmax, {g.add_input("x", {2})});
  const Tensor out = run_one(g, y, {Tensor({2}, {1000.0f, 1000.0f})});
  expect_all_near(out.data, {0.5f, 0.5f}, 0);
}

// Plain attention of one query row over keys [0, visible), for expected values.
std::vector<double> attend(const float* q, const float* k, const float* v, int d, int dv,
                           int visible, double scale) {
  std::vector<double> w(static_cast<size_t>(visible));
  double total = 0;
  for (int j = 0; j < visible; ++j) {
    double dot = 0;
    for (int t = 0; t < d; ++t) dot += double(q[t]) * k[j * d + t];
    w[static_cast<size_t>(j)] = std::exp(dot * scale);
    total += w[static_cast<size_t>(j)];
  }
  std::vector<double> out(static_cast<size_t>(dv), 0.0);
  for (int j = 0; j < visible; ++j)
    for (int t = 0; t < dv; ++t)
      out[static_cast<size_t>(t)] += w[static_cast<size_t>(j)] / total * v[j * dv + t];
  return out;
}

Tensor run_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, Attrs attrs) {
  Graph g;
  ValueId y =
      g.add_node(OpKind::sdpa,
                 {g.add_input("q", q.shape), g.add_input("k", k.shape), g.add_input("v", v.shape)},
                 std::move(attrs));
  return run_one(g, y, {q, k, v});
}

TEST(ReferenceSdpa, OneKeyReturnsItsValue) {
  const Tensor q = random_tensor({1, 2, 3, 4}, 3);
  const Tensor k = random_tensor({1, 2, 1, 4}, 4);
  const Tensor v = random_tensor({1, 2, 1, 5}, 5);
  const Tensor out = run_sdpa(q, k, v, {});
  ASSERT_EQ(out.shape, (Shape{1, 2, 3, 5}));
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i)
      for (int t = 0; t < 5; ++t)
        EXPECT_NEAR(out.data[(h * 3 + i) * 5 + t], v.data[h * 5 + t], 1e-6);
}

TEST(ReferenceSdpa, CausalDecodeQuerySeesEveryKey) {
  // Sq = 1 < Skv = 6: the single query is the last position, so causal == full attention.
  const Tensor q = random_tensor({2, 1, 1, 4}, 6);
  const Tensor k = random_tensor({2, 1, 6, 4}, 7);
  const Tensor v = random_tensor({2, 1, 6, 3}, 8);
  const Tensor causal = run_sdpa(q, k, v, {{"causal", int64_t{1}}});
  const Tensor full = run_sdpa(q, k, v, {});
  expect_all_near(causal.data, full.data, 0);
  for (int b = 0; b < 2; ++b) {
    const auto want =
        attend(q.data.data() + b * 4, k.data.data() + b * 24, v.data.data() + b * 18, 4, 3, 6, 0.5);
    for (int t = 0; t < 3; ++t) EXPECT_NEAR(causal.data[b * 3 + t], want[t], 1e-6);
  }
}

TEST(ReferenceSdpa, CausalPrefillQuerySeesOnlyEarlierKeys) {
  const Tensor q = random_tensor({1, 1, 5, 4}, 9);
  const Tensor k = random_tensor({1, 1, 5, 4}, 10);
  const Tensor v = random_tensor({1, 1, 5, 2}, 11);
  const Tensor out = run_sdpa(q, k, v, {{"causal", int64_t{1}}});
  for (int i = 0; i < 5; ++i) {
    const auto want = attend(q.data.data() + i * 4, k.data.data(), v.data.data(), 4, 2, i + 1, 0.5);
    for (int t = 0; t < 2; ++t) EXPECT_NEAR(out.data[i * 2 + t], want[t], 1e-6) << "query " << i;
  }
}

TEST(ReferenceSdpa, CausalQueriesAlignToTheEndOfTheKeys) {
  // Sq = 2, Skv = 5: query 0 sees keys 0..3, query 1 sees keys 0..4.
  const Tensor q = random_tensor({1, 1, 2, 3}, 12);
  const Tensor k = random_tensor({1, 1, 5, 3}, 13);
  const Tensor v = random_tensor({1, 1, 5, 3}, 14);
  const Tensor out = run_sdpa(q, k, v, {{"causal", int64_t{1}}});
  const double scale = 1 / std::sqrt(3.0);
  for (int i = 0; i < 2; ++i) {
    const auto want =
        attend(q.data.data() + i * 3, k.data.data(), v.data.data(), 3, 3, 4 + i, scale);
    for (int t = 0; t < 3; ++t) EXPECT_NEAR(out.data[i * 3 + t], want[t], 1e-6) << "query " << i;
  }
}

TEST(ReferenceSdpa, GroupedQueryHeadsShareTheirKvHead) {
  // Hq = 6, Hkv = 2: query heads 0-2 use kv head 0, heads 3-5 use kv head 1.
  const Tensor q = random_tensor({1, 6, 2, 4}, 15);
  const Tensor k = random_tensor({1, 2, 3, 4}, 16);
  const Tensor v = random_tensor({1, 2, 3, 5}, 17);
  const Tensor out = run_sdpa(q, k, v, {});
  for (int h = 0; h < 6; ++h) {
    const int kvh = h / 3;
    for (int i = 0; i < 2; ++i) {
      const auto want = attend(q.data.data() + (h * 2 + i) * 4, k.data.data() + kvh * 12,
                               v.data.data() + kvh * 15, 4, 5, 3, 0.5);
      for (int t = 0; t < 5; ++t)
        EXPECT_NEAR(out.data[(h * 2 + i) * 5 + t], want[t], 1e-6) << "head " << h;
    }
  }
}

TEST(ReferenceSdpa, ScaleAttributeOverridesTheDefault) {
  // Scale 0 makes every visible key equally likely: the output is the mean value.
  const Tensor q = random_tensor({1, 1, 1, 4}, 18);
  const Tensor k = random_tensor({1, 1, 3, 4}, 19);
  const Tensor v = Tensor({1, 1, 3, 1}, {3, 6, 12});
  const Tensor out = run_sdpa(q, k, v, {{"scale", 0.0}});
  EXPECT_NEAR(out.data[0], 7.0f, 1e-6);
}

Tensor run_rope(const Tensor& x, Attrs attrs) {
  Graph g;
  ValueId y = g.add_node(OpKind::rope, {g.add_input("x", x.shape)}, std::move(attrs));
  return run_one(g, y, {x});
}

TEST(ReferenceRope, PositionZeroIsIdentity) {
  const Tensor x = random_tensor({2, 3, 1, 8}, 20);
  const Tensor out = run_rope(x, {});
  expect_all_near(out.data, x.data, 0);
}

TEST(ReferenceRope, PreservesTheNormOfEachRotatedPair) {
  const Tensor x = random_tensor({1, 2, 5, 6}, 21);
  const Tensor out = run_rope(x, {{"pos_offset", int64_t{3}}, {"theta", 500000.0}});
  for (int row = 0; row < 10; ++row)
    for (int d = 0; d < 3; ++d) {
      const int i = row * 6 + d, j = i + 3;
      EXPECT_NEAR(std::hypot(out.data[i], out.data[j]), std::hypot(x.data[i], x.data[j]), 1e-5);
    }
}

TEST(ReferenceRope, RotatesHalvesByPositionTimesFrequency) {
  // D = 4, theta = 100: frequencies 1 and 0.1. Row s sits at position pos_offset + s = 2 + s.
  const Tensor x = Tensor({1, 1, 2, 4}, {1, 2, 3, 4, 1, 2, 3, 4});
  const Tensor out = run_rope(x, {{"theta", 100.0}, {"pos_offset", int64_t{2}}});
  for (int s = 0; s < 2; ++s) {
    const double p = 2 + s;
    const double a0 = p * 1.0, a1 = p * 0.1;
    const std::vector<float> want = {static_cast<float>(1 * std::cos(a0) - 3 * std::sin(a0)),
                                     static_cast<float>(2 * std::cos(a1) - 4 * std::sin(a1)),
                                     static_cast<float>(3 * std::cos(a0) + 1 * std::sin(a0)),
                                     static_cast<float>(4 * std::cos(a1) + 2 * std::sin(a1))};
    for (int d = 0; d < 4; ++d) EXPECT_NEAR(out.data[s * 4 + d], want[d], 1e-6) << s << "," << d;
  }
}

}  // namespace
}  // namespace cuvil::runtime::reference::testing
