// Device memory layout: the arena as the memory plan sized it, inputs after it, constants in the
// forms their steps read, scratch for operand conversion.
#include "runtime/cuda/device_memory.h"

#include <gtest/gtest.h>

#include "passes/pipeline.h"
#include "tests/cuda/cuda_test_util.h"

namespace cuvil::runtime::cuda {
namespace {

using testing::cuda_config_with;

struct Laid {
  Plan plan;
  std::vector<StepLowering> lowering;
  DeviceLayout layout;
};

Laid lay_out(const ir::Graph& g, const passes::PipelineConfig& c) {
  Laid l;
  l.plan = passes::compile(g, c, 1).plan;
  l.lowering = lower_plan(l.plan);
  l.layout = layout_device_memory(l.plan, l.lowering);
  return l;
}

int32_t constant_named(const Plan& p, const std::string& name) {
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    if (p.tensors[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

TEST(CudaDeviceMemory, ArenaIsTheMemoryPlansAndTensorsKeepItsOffsets) {
  const Laid l = lay_out(testing::tiny_suite_graph("resnet50"), passes::default_pipeline("cuda"));
  EXPECT_GE(l.layout.arena_bytes, l.plan.arena_bytes);
  EXPECT_EQ(l.layout.arena_bytes % kDeviceAlignment, 0);
  EXPECT_LT(l.layout.arena_bytes - l.plan.arena_bytes, kDeviceAlignment);
  for (const PlanTensor& t : l.plan.tensors) {
    if (t.storage != PlanTensor::Storage::arena) continue;
    EXPECT_EQ(t.offset % 16, 0) << t.name;
    EXPECT_LE(t.offset + ir::num_elements(t.shape) * 4, l.plan.arena_bytes) << t.name;
  }
}

TEST(CudaDeviceMemory, InputsFollowTheArenaAligned) {
  const Laid l = lay_out(testing::linear_graph(7, 17, 3), passes::default_pipeline("cuda"));
  ASSERT_EQ(l.layout.input_offsets.size(), 1u);
  EXPECT_EQ(l.layout.input_offsets[0], l.layout.arena_bytes);
  EXPECT_EQ(l.layout.activation_block_bytes, l.layout.arena_bytes + align_device(7 * 17 * 4));
}

TEST(CudaDeviceMemory, F32WeightsAreUploadedOnceAsIs) {
  const Laid l = lay_out(testing::linear_graph(7, 17, 3), passes::default_pipeline("cuda"));
  ASSERT_EQ(l.layout.constants.size(), 2u);  // weight, bias
  const ConstantSlot* w =
      l.layout.find(constant_named(l.plan, "w"), StorageType::f32, WeightForm::as_is);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->bytes, 3 * 17 * 4);
  EXPECT_EQ(l.layout.scratch_bytes, 0);
  for (const ConstantSlot& s : l.layout.constants) EXPECT_EQ(s.offset % kDeviceAlignment, 0);
}

TEST(CudaDeviceMemory, Bf16LinearGetsA16BitWeightCopyAndActivationScratch) {
  const Laid l = lay_out(testing::linear_graph(7, 17, 3),
                         cuda_config_with("cuda-precision", "linear_dtype", std::string("bf16")));
  const int32_t w = constant_named(l.plan, "w");
  const ConstantSlot* slot = l.layout.find(w, StorageType::bf16, WeightForm::as_is);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot->bytes, 3 * 17 * 2);
  EXPECT_EQ(l.layout.find(w, StorageType::f32, WeightForm::as_is), nullptr);  // no f32 copy
  EXPECT_EQ(l.plan.tensors[static_cast<size_t>(w)].dtype, ir::DType::bf16);
  EXPECT_EQ(l.layout.scratch_bytes, align_device(7 * 17 * 2));
  // The bias stays f32.
  EXPECT_NE(l.layout.find(constant_named(l.plan, "b"), StorageType::f32, WeightForm::as_is),
            nullptr);
}

TEST(CudaDeviceMemory, NhwcConvWeightsAreRepacked) {
  const Laid l = lay_out(testing::conv_graph(3, 7, 7, 5), passes::default_pipeline("cuda"));
  const int32_t w = constant_named(l.plan, "w");
  const ConstantSlot* slot = l.layout.find(w, StorageType::f32, WeightForm::ohwi);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot->bytes, 5 * 3 * 3 * 3 * 4);
}

TEST(CudaDeviceMemory, NchwConvWeightsStayAsIs) {
  const Laid l = lay_out(testing::conv_graph(3, 7, 7, 5),
                         cuda_config_with("layout", "memory_layout", std::string("nchw")));
  EXPECT_NE(l.layout.find(constant_named(l.plan, "w"), StorageType::f32, WeightForm::as_is),
            nullptr);
}

TEST(CudaDeviceMemory, HalfCudnnConvNeedsScratchForInputAndOutput) {
  const Laid l = lay_out(testing::conv_graph(3, 7, 7, 5),
                         cuda_config_with("cuda-precision", "conv_dtype", std::string("f16")));
  EXPECT_EQ(l.layout.scratch_bytes, align_device(3 * 7 * 7 * 2) + align_device(5 * 7 * 7 * 2));
}

TEST(CudaDeviceMemory, EveryConstantOfEverySuiteHasASlot) {
  for (const char* suite : {"resnet50", "llama3-8b", "sdxl"}) {
    SCOPED_TRACE(suite);
    const Laid l = lay_out(testing::tiny_suite_graph(suite), passes::default_pipeline("cuda"));
    for (size_t i = 0; i < l.plan.steps.size(); ++i) {
      const Step& s = l.plan.steps[i];
      for (size_t in = 0; in < s.inputs.size(); ++in) {
        const PlanTensor& t = l.plan.tensors[static_cast<size_t>(s.inputs[in])];
        if (t.storage != PlanTensor::Storage::constant) continue;
        const ConstantNeed need = constant_need(s, l.lowering[i], in);
        EXPECT_NE(l.layout.find(s.inputs[in], need.type, need.form), nullptr) << t.name;
      }
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime::cuda
