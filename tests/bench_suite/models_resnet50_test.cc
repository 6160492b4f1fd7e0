#include <gtest/gtest.h>

#include "base/error.h"
#include "bench_suite/models/resnet50.h"
#include "models_test_util.h"
#include "passes/ir/verifier.h"

namespace cuvil::bench::models {
namespace {

using testing::any_constant_materialised;
using testing::expect_sane;
using testing::find_node;
using testing::find_value;

TEST(ResNet50, FullModelHasTorchvisionParameterCount) {
  const ir::Graph g = build_resnet50({});
  EXPECT_EQ(g.parameter_count(), 25'557'032);
}

// Multiply-accumulates of the convs and the fc layer: the 4.09 GMAC everyone quotes.
TEST(ResNet50, FullModelDoes4Point09GigaMacs) {
  const ir::Graph g = build_resnet50({});
  int64_t macs = 0;
  for (const ir::Node& node : g.nodes()) {
    if (node.op != ir::OpKind::conv2d && node.op != ir::OpKind::linear) continue;
    const ir::Shape& w = g.value(node.inputs[1]).shape;
    int64_t per_output = 1;
    for (size_t i = 1; i < w.size(); ++i) per_output *= w[i];
    macs += ir::num_elements(g.value(node.output).shape) * per_output;
  }
  EXPECT_EQ(macs, 4'089'184'256);
}

TEST(ResNet50, BuildingDoesNotMaterialiseWeights) {
  const ir::Graph g = build_resnet50({});
  EXPECT_FALSE(any_constant_materialised(g));
}

TEST(ResNet50, FullModelMapsImageToLogits) {
  const ir::Graph g = build_resnet50({});
  ir::verify(g);
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.inputs()[0]).name, "image");
  EXPECT_EQ(g.value(g.inputs()[0]).shape, (ir::Shape{1, 3, 224, 224}));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).shape, (ir::Shape{1, 1000}));
}

TEST(ResNet50, OddImageSizeAndBatchTwo) {
  ResNet50Options o;
  o.batch = 2;
  o.image = 97;
  const ir::Graph g = build_resnet50(o);
  ir::verify(g);
  EXPECT_EQ(g.value(g.outputs()[0]).shape, (ir::Shape{2, 1000}));
  EXPECT_EQ(g.parameter_count(), 25'557'032);
}

TEST(ResNet50, StrideSitsInTheThreeByThreeConv) {
  const ir::Graph g = build_resnet50({});
  const ir::Node* conv1 = find_node(g, "layer2.0.conv1");
  const ir::Node* conv2 = find_node(g, "layer2.0.conv2");
  const ir::Node* down = find_node(g, "layer2.0.downsample.0");
  ASSERT_TRUE(conv1 && conv2 && down);
  EXPECT_EQ(conv1->attrs.get_ints("stride", {}), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(conv2->attrs.get_ints("stride", {}), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(down->attrs.get_ints("stride", {}), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(g.value(conv2->output).shape, (ir::Shape{1, 128, 28, 28}));
}

TEST(ResNet50, OnlyFirstBlockOfAStageDownsamples) {
  const ir::Graph g = build_resnet50({});
  EXPECT_NE(find_node(g, "layer1.0.downsample.0"), nullptr);
  EXPECT_EQ(find_node(g, "layer1.1.downsample.0"), nullptr);
  EXPECT_NE(find_node(g, "layer4.2.relu3"), nullptr);
  EXPECT_EQ(find_node(g, "layer4.3.relu3"), nullptr);
}

TEST(ResNet50, RunningStatisticsAreBuffersWithPositiveVariance) {
  const ir::Graph g = build_resnet50(resnet50_tiny());
  const ir::ValueId var = find_value(g, "layer1.0.bn1.running_var");
  const ir::ValueId mean = find_value(g, "layer1.0.bn1.running_mean");
  const ir::ValueId gamma = find_value(g, "layer1.0.bn1.weight");
  ASSERT_NE(var, ir::kNoValue);
  EXPECT_FALSE(g.value(var).trainable);
  EXPECT_FALSE(g.value(mean).trainable);
  EXPECT_TRUE(g.value(gamma).trainable);
  for (float v : g.constant_data(var)) EXPECT_GT(v, 0.0f);
}

TEST(ResNet50, SameOptionsBuildSameWeights) {
  const ir::Graph a = build_resnet50(resnet50_tiny());
  const ir::Graph b = build_resnet50(resnet50_tiny());
  for (const char* name : {"conv1.weight", "layer3.0.conv2.weight", "fc.bias"}) {
    EXPECT_EQ(a.constant_data(find_value(a, name)), b.constant_data(find_value(b, name))) << name;
  }
}

TEST(ResNet50, SeedChangesWeights) {
  ResNet50Options other = resnet50_tiny();
  other.seed = 2;
  const ir::Graph a = build_resnet50(resnet50_tiny());
  const ir::Graph b = build_resnet50(other);
  EXPECT_NE(a.constant_data(find_value(a, "fc.weight")),
            b.constant_data(find_value(b, "fc.weight")));
}

TEST(ResNet50, TensorsOfOneModelDiffer) {
  const ir::Graph g = build_resnet50(resnet50_tiny());
  EXPECT_NE(g.constant_data(find_value(g, "layer1.0.conv2.weight")),
            g.constant_data(find_value(g, "layer1.1.conv2.weight")));
}

TEST(ResNet50, TinyRunsThroughReferenceWithSaneLogits) {
  const ir::Graph g = build_resnet50(resnet50_tiny());
  const auto out = runtime::reference::interpret(g, ir::random_inputs(g, 7));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (ir::Shape{1, 10}));
  expect_sane(out[0]);
}

TEST(ResNet50, TinyOddSizeBatchThreeRunsThroughReference) {
  ResNet50Options o = resnet50_tiny();
  o.batch = 3;
  o.image = 17;
  const ir::Graph g = build_resnet50(o);
  const auto out = runtime::reference::interpret(g, ir::random_inputs(g, 3));
  EXPECT_EQ(out[0].shape, (ir::Shape{3, 10}));
  expect_sane(out[0]);
}

TEST(ResNet50, RejectsBadOptions) {
  ResNet50Options o;
  o.width_divisor = 3;
  EXPECT_THROW(build_resnet50(o), UserError);
  o = {};
  o.blocks = {3, 4, 6};
  EXPECT_THROW(build_resnet50(o), UserError);
  o = {};
  o.batch = 0;
  EXPECT_THROW(build_resnet50(o), UserError);
  o = {};
  o.classes = 0;
  EXPECT_THROW(build_resnet50(o), UserError);
}

}  // namespace
}  // namespace cuvil::bench::models
