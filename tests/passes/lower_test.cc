// Lowering: storage of every value, kernel choice, declared work, and its must-fail cases.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "lower_support.h"
#include "runtime/kernel_table.h"
#include "test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::ValueId;
using runtime::PlanTensor;
using Ints = std::vector<int64_t>;

// x -> conv(3x3) -> relu, output twice plus the input itself.
Graph conv_relu(const std::string& kernel = "") {
  Graph g;
  const ValueId x = g.add_input("x", {1, 3, 8, 8});
  ir::Attrs a{{"pad", Ints{1, 1}}};
  if (!kernel.empty()) a.set("impl", kernel);
  const ValueId c =
      g.add_node(OpKind::conv2d, {x, testing::random_constant(g, "w", {4, 3, 3, 3}, 1)}, a, "conv");
  const ValueId r = g.add_node(OpKind::relu, {c}, {}, "relu");
  g.mark_output(r);
  g.mark_output(x);
  g.mark_output(r);
  return g;
}

TEST(Lower, ConstantsShareTheGraphsBuffer) {
  Graph g = conv_relu();
  const runtime::Plan plan = lower(g, {});
  ASSERT_EQ(plan.constants.size(), 1u);
  EXPECT_EQ(plan.constants[0].get(), g.value(1).data.get());  // value 1 is "w"
}

TEST(Lower, UnplannedIntermediatesGetDisjointAlignedRegions) {
  const runtime::Plan plan = lower(conv_relu(), {});
  ASSERT_EQ(plan.steps.size(), 2u);
  const PlanTensor& a = plan.tensors[plan.steps[0].output];
  const PlanTensor& b = plan.tensors[plan.steps[1].output];
  EXPECT_EQ(a.storage, PlanTensor::Storage::arena);
  EXPECT_EQ(a.offset % 64, 0);
  EXPECT_EQ(b.offset % 64, 0);
  EXPECT_GE(b.offset, a.offset + 4 * 4 * 8 * 8);
  EXPECT_GE(plan.arena_bytes, b.offset + 4 * 4 * 8 * 8);
}

TEST(Lower, PlannedArenaOffsetsAreKept) {
  Graph g = conv_relu();
  g.mutable_value(g.nodes()[0].output).arena_offset = 1024;
  g.mutable_value(g.nodes()[1].output).arena_offset = 0;
  const runtime::Plan plan = lower(g, {});
  EXPECT_EQ(plan.tensors[plan.steps[0].output].offset, 1024);
  EXPECT_EQ(plan.tensors[plan.steps[1].output].offset, 0);
  EXPECT_EQ(plan.arena_bytes, 1024 + 4 * 4 * 8 * 8);
  EXPECT_LT(testing::compiled_error(g, 1), 1e-4);
}

TEST(Lower, OutputsMayRepeatAndIncludeInputs) {
  const Graph g = conv_relu();
  const runtime::Plan plan = lower(g, {});
  ASSERT_EQ(plan.outputs.size(), 3u);
  EXPECT_EQ(plan.outputs[0], plan.outputs[2]);
  EXPECT_EQ(plan.tensors[plan.outputs[1]].storage, PlanTensor::Storage::input);
  EXPECT_LT(testing::compiled_error(g, 2), 1e-4);
}

TEST(Lower, DeclaresTwoFlopsPerMultiplyAccumulate) {
  const runtime::Plan plan = lower(conv_relu(), {});
  EXPECT_DOUBLE_EQ(plan.steps[0].flops, 2.0 * 4 * 8 * 8 * 3 * 3 * 3);
  EXPECT_DOUBLE_EQ(plan.steps[1].flops, 4.0 * 8 * 8);
  EXPECT_DOUBLE_EQ(plan.steps[1].bytes, 2 * 4.0 * 4 * 8 * 8);
}

TEST(Lower, BlockedConvFlopsCountRealOutputChannelsOnly) {
  // 20 output channels in nchw16c occupy 2 blocks of 16 (32 lanes); 20 are declared.
  Graph g;
  const ir::ValueId x = g.add_input("x", {1, 1, 6, 6, 16});
  const ir::ValueId w = testing::random_constant(g, "w", {20, 5, 3, 3}, 3);
  const ir::ValueId y = g.add_node(OpKind::conv2d, {x, w},
                                   {{"stride", std::vector<int64_t>{1, 1}},
                                    {"pad", std::vector<int64_t>{1, 1}},
                                    {"groups", int64_t{1}},
                                    {"layout", std::string("nchw16c")}});
  g.mark_output(y);
  ASSERT_EQ(g.value(y).shape, (ir::Shape{1, 2, 6, 6, 16}));
  const runtime::Plan plan = lower(g, {});
  EXPECT_DOUBLE_EQ(plan.steps[0].flops, 2.0 * 20 * 6 * 6 * 5 * 3 * 3);
}

TEST(Lower, DefaultKernelUnlessTheNodeNamesOne) {
  EXPECT_EQ(lower(conv_relu(), {}).steps[0].kernel, runtime::default_kernel(OpKind::conv2d).name);
  const runtime::Plan plan = lower(conv_relu("conv2d.im2col"), {.threads = 2});
  EXPECT_EQ(plan.steps[0].kernel, "conv2d.im2col");
  EXPECT_EQ(plan.steps[0].fn, runtime::find_kernel(OpKind::conv2d, "conv2d.im2col")->fn);
  EXPECT_EQ(plan.threads, 2);
}

TEST(Lower, UnknownKernelIsAUserErrorNamingTheNodeAndTheChoices) {
  try {
    lower(conv_relu("conv2d.winograd"), {});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("conv"), std::string::npos);
    EXPECT_NE(what.find("conv2d.winograd"), std::string::npos);
    EXPECT_NE(what.find("conv2d.im2col"), std::string::npos);
  }
}

TEST(Lower, KernelThatCannotRunTheNodeIsAUserError) {
  EXPECT_THROW(lower(conv_relu("conv2d.gemm_1x1"), {}), UserError);
}

TEST(Lower, GemmKernelsAreScheduledAndABadKnobFailsAtLowering) {
  Graph g;
  const ValueId x = g.add_input("x", {33, 17});
  const ValueId y = g.add_node(OpKind::linear, {x, testing::random_constant(g, "w", {7, 17}, 1)},
                               {{"gemm.mc", int64_t{96}}}, "fc");
  g.mark_output(y);
  const runtime::Plan plan = lower(g, {});
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_NE(plan.steps[0].schedule, nullptr);
  g.mutable_nodes()[0].attrs.set("gemm.mr_nr", std::string("12by32"));
  EXPECT_THROW(lower(g, {}), UserError);
}

}  // namespace
}  // namespace cuvil::passes
