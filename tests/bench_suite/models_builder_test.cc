#include <gtest/gtest.h>

#include "bench_suite/models/builder.h"
#include "models_test_util.h"

namespace cuvil::bench::models {
namespace {

TEST(ModelBuilder, ScopesPrefixNamesHierarchically) {
  GraphBuilder b(1);
  const ir::ValueId x = b.input("x", {2, 3, 5, 5});
  ir::ValueId y;
  {
    auto outer = b.scope("layer1");
    auto inner = b.scope("0");
    y = b.conv2d(x, "conv1", 4, 3, 1, 1, false);
  }
  const ir::Graph g = b.finish({y});
  EXPECT_EQ(g.value(y).name, "layer1.0.conv1");
  EXPECT_NE(testing::find_value(g, "layer1.0.conv1.weight"), ir::kNoValue);
  EXPECT_EQ(g.value(testing::find_value(g, "layer1.0.conv1.weight")).shape,
            (ir::Shape{4, 3, 3, 3}));
}

TEST(ModelBuilder, InputsKeepTheirNamesInsideScopes) {
  GraphBuilder b(1);
  auto scope = b.scope("layers.3");
  const ir::ValueId x = b.input("layer3.past_k", {1, 2, 3, 4});
  EXPECT_EQ(b.graph().value(x).name, "layer3.past_k");
}

TEST(ModelBuilder, ConstantSeedDependsOnNameAndBaseSeed) {
  EXPECT_EQ(constant_seed(1, "fc.weight"), constant_seed(1, "fc.weight"));
  EXPECT_NE(constant_seed(1, "fc.weight"), constant_seed(1, "fc.bias"));
  EXPECT_NE(constant_seed(1, "fc.weight"), constant_seed(2, "fc.weight"));
}

TEST(ModelBuilder, StableHashIsFnv1a) {
  // Pinned so weights never change with the compiler or standard library.
  EXPECT_EQ(stable_hash(""), 0xCBF29CE484222325ull);
  EXPECT_EQ(stable_hash("a"), 0xAF63DC4C8601EC8Cull);
}

TEST(ModelBuilder, LinearWeightScaleFollowsFanIn) {
  GraphBuilder b(3);
  const ir::ValueId x = b.input("x", {1, 400});
  const ir::ValueId y = b.linear(x, "proj", 300, true);
  const ir::Graph g = b.finish({y});
  const auto& w = g.constant_data(testing::find_value(g, "proj.weight"));
  double sum_sq = 0.0;
  for (float v : w) sum_sq += static_cast<double>(v) * v;
  const double stddev = std::sqrt(sum_sq / static_cast<double>(w.size()));
  EXPECT_NEAR(stddev, 1.0 / 20.0, 0.002);
}

TEST(ModelBuilder, MultiHeadPlumbingRoundTrips) {
  GraphBuilder b(1);
  const ir::ValueId x = b.input("x", {2, 7, 12});
  const ir::ValueId heads = b.split_heads(x, 3, "split");
  EXPECT_EQ(b.shape(heads), (ir::Shape{2, 3, 7, 4}));
  const ir::ValueId back = b.merge_heads(heads, "merge");
  const ir::Graph g = b.finish({back});
  const ir::Tensor in = ir::random_inputs(g, 1)[0];
  const auto out = runtime::reference::interpret(g, {in});
  EXPECT_EQ(out[0].shape, in.shape);
  EXPECT_EQ(out[0].data, in.data);
}

}  // namespace
}  // namespace cuvil::bench::models
