// Where everything lives on the device, decided on the host before any allocation: the
// activation arena exactly as the Plan's memory plan sized it (Plan::arena_bytes, the offsets
// memory-plan assigned), the graph inputs after it, each constant in each form its steps read
// (f32 as is, bf16/f16 copies where a step's precision says so, conv weights repacked to
// [O, KH, KW, C/groups] for NHWC convolutions), and one scratch region for per-step operand
// conversions (activations converted to bf16/f16 before a tensor-core GEMM). Pure host logic.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cuda/kernel_choice.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cuda {

inline constexpr int64_t kDeviceAlignment = 256;  // cudaMalloc's own alignment

enum class StorageType : uint8_t { f32, bf16, f16 };
int64_t storage_bytes(StorageType type);
std::string_view to_string(StorageType type);
// The storage type a GEMM-class step's operands have in `precision` (tf32 computes from f32).
StorageType storage_for(Precision precision);

enum class WeightForm : uint8_t { as_is, ohwi };  // ohwi: conv weights [O, KH, KW, C/groups]

struct ConstantSlot {
  int32_t tensor = -1;  // Plan::tensors index (storage constant)
  StorageType type = StorageType::f32;
  WeightForm form = WeightForm::as_is;
  int64_t offset = 0;  // in the constants block
  int64_t bytes = 0;
};

struct DeviceLayout {
  int64_t arena_bytes = 0;             // the memory plan's arena (aligned up)
  std::vector<int64_t> input_offsets;  // graph inputs, in the activation block after the arena
  int64_t activation_block_bytes = 0;  // arena + inputs
  std::vector<ConstantSlot> constants;
  int64_t constants_bytes = 0;
  int64_t scratch_bytes = 0;  // the largest conversion need of any one step
  // The slot of constant tensor `tensor` in this type and form, or nullptr.
  const ConstantSlot* find(int32_t tensor, StorageType type, WeightForm form) const;
};

// How step `step` (lowered as `lowering`) reads its input `input`: which type and form, when that
// input is a constant.
struct ConstantNeed {
  StorageType type = StorageType::f32;
  WeightForm form = WeightForm::as_is;
};
ConstantNeed constant_need(const Step& step, const StepLowering& lowering, size_t input);
// Bytes of scratch the step needs for converted operands (0 for most).
int64_t scratch_need(const Step& step, const StepLowering& lowering);

DeviceLayout layout_device_memory(const Plan& plan, const std::vector<StepLowering>& lowering);

inline int64_t align_device(int64_t bytes) {
  return (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

}  // namespace cuvil::runtime::cuda
