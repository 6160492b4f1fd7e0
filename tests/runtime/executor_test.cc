#include <gtest/gtest.h>

#include <memory>

#include "base/error.h"
#include "runtime/executor.h"
#include "runtime/kernel_table.h"

namespace cuvil::runtime {
namespace {

// x[2, 3] -> relu -> add constant c[3] -> outputs (sum, x, sum).
Plan small_plan(int threads) {
  Plan plan;
  plan.threads = threads;
  plan.tensors.push_back({"x", {2, 3}, ir::DType::f32, PlanTensor::Storage::input, 0, 0});
  plan.tensors.push_back({"c", {3}, ir::DType::f32, PlanTensor::Storage::constant, 0, 0});
  plan.tensors.push_back({"r", {2, 3}, ir::DType::f32, PlanTensor::Storage::arena, 0, -1});
  plan.tensors.push_back({"s", {2, 3}, ir::DType::f32, PlanTensor::Storage::arena, 64, -1});
  plan.constants.push_back(std::make_shared<const std::vector<float>>(std::vector<float>{1, 2, 3}));
  plan.inputs = {0};
  plan.outputs = {3, 0, 3};
  plan.arena_bytes = 128;
  Step relu;
  relu.op = ir::OpKind::relu;
  relu.kernel = default_kernel(relu.op).name;
  relu.fn = default_kernel(relu.op).fn;
  relu.inputs = {0};
  relu.input_shapes = {{2, 3}};
  relu.output = 2;
  relu.output_shape = {2, 3};
  Step add = relu;
  add.op = ir::OpKind::add;
  add.fn = default_kernel(add.op).fn;
  add.inputs = {2, 1};
  add.input_shapes = {{2, 3}, {3}};
  add.output = 3;
  plan.steps = {relu, add};
  return plan;
}

TEST(Executor, RunsStepsInOrderAndReturnsEveryOutput) {
  Executor ex(small_plan(1));
  const ir::Tensor x({2, 3}, {-1, 2, -3, 4, -5, 6});
  const auto out = ex.run({x});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].data, (std::vector<float>{1, 4, 3, 5, 2, 9}));
  EXPECT_EQ(out[1].data, x.data);  // an input returned as an output
  EXPECT_EQ(out[2].data, out[0].data);
}

TEST(Executor, RepeatedRunsWithTwoThreadsGiveTheSameResult) {
  Executor ex(small_plan(2));
  const ir::Tensor x({2, 3}, {0.5f, -2, 3, 4, 5, -6});
  const auto first = ex.run({x});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ex.run({x})[0].data, first[0].data);
}

TEST(Executor, WrongInputCountIsAUserError) {
  Executor ex(small_plan(1));
  EXPECT_THROW(ex.run({}), UserError);
}

TEST(Executor, WrongInputShapeIsAUserError) {
  Executor ex(small_plan(1));
  EXPECT_THROW(ex.run({ir::Tensor({3, 2})}), UserError);
}

TEST(KernelTable, EveryOpHasADefaultKernelNamedAfterIt) {
  for (int i = 0; i < ir::kOpKindCount; ++i) {
    const auto op = static_cast<ir::OpKind>(i);
    const KernelInfo& k = default_kernel(op);
    EXPECT_EQ(k.op, op);
    EXPECT_NE(k.fn, nullptr);
    EXPECT_EQ(k.name.rfind(std::string(ir::to_string(op)) + ".", 0), 0u) << k.name;
    EXPECT_EQ(find_kernel(op, k.name), &k);
  }
}

TEST(KernelTable, UnknownNameIsNotFound) {
  EXPECT_EQ(find_kernel(ir::OpKind::conv2d, "conv2d.winograd"), nullptr);
  EXPECT_EQ(find_kernel(ir::OpKind::linear, "conv2d.im2col"), nullptr);
}

}  // namespace
}  // namespace cuvil::runtime
