#include "runtime/cuda/device_memory.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "base/error.h"

namespace cuvil::runtime::cuda {

using ir::OpKind;

int64_t storage_bytes(StorageType type) {
  return type == StorageType::f32 ? 4 : 2;
}

std::string_view to_string(StorageType type) {
  switch (type) {
    case StorageType::f32:
      return "f32";
    case StorageType::bf16:
      return "bf16";
    case StorageType::f16:
      return "f16";
  }
  return "?";
}

StorageType storage_for(Precision precision) {
  switch (precision) {
    case Precision::bf16:
      return StorageType::bf16;
    case Precision::f16:
      return StorageType::f16;
    default:
      return StorageType::f32;
  }
}

const ConstantSlot* DeviceLayout::find(int32_t tensor, StorageType type, WeightForm form) const {
  for (const ConstantSlot& s : constants) {
    if (s.tensor == tensor && s.type == type && s.form == form) return &s;
  }
  return nullptr;
}

ConstantNeed constant_need(const Step& step, const StepLowering& lowering, size_t input) {
  ConstantNeed need;
  if (input != 1) return need;  // only weights change type or form; biases etc. stay f32
  const StorageType type = storage_for(lowering.precision);
  switch (step.op) {
    case OpKind::linear:
      need.type = type;
      break;
    case OpKind::conv2d:
      need.type = type;
      if (step.attrs.get_string("layout", "nchw") == "nhwc") need.form = WeightForm::ohwi;
      break;
    default:
      break;  // matmul converts both operands per call (they are activations in the models)
  }
  return need;
}

int64_t scratch_need(const Step& step, const StepLowering& lowering) {
  const StorageType type = storage_for(lowering.precision);
  if (type == StorageType::f32 || step.input_shapes.size() < 2) return 0;
  const int64_t half = storage_bytes(type);
  const int64_t a = ir::num_elements(step.input_shapes[0]) * half;
  switch (step.op) {
    case OpKind::linear:
      return align_device(a);
    case OpKind::matmul:
      return align_device(a) + align_device(ir::num_elements(step.input_shapes[1]) * half);
    case OpKind::conv2d:
      // x converted; cuDNN also writes a 16-bit y that is widened into the arena.
      return align_device(a) + (lowering.library == Library::cudnn
                                    ? align_device(ir::num_elements(step.output_shape) * half)
                                    : 0);
    default:
      return 0;
  }
}

DeviceLayout layout_device_memory(const Plan& plan, const std::vector<StepLowering>& lowering) {
  CUVIL_CHECK(lowering.size() == plan.steps.size(), "one lowering per step");
  DeviceLayout layout;
  layout.arena_bytes = align_device(std::max<int64_t>(plan.arena_bytes, 0));
  int64_t offset = layout.arena_bytes;
  for (int32_t t : plan.inputs) {
    layout.input_offsets.push_back(offset);
    offset += align_device(ir::num_elements(plan.tensors[static_cast<size_t>(t)].shape) * 4);
  }
  layout.activation_block_bytes = offset;

  std::map<std::tuple<int32_t, StorageType, WeightForm>, size_t> seen;
  auto need_constant = [&](int32_t tensor, ConstantNeed need) {
    const PlanTensor& t = plan.tensors[static_cast<size_t>(tensor)];
    if (t.storage != PlanTensor::Storage::constant) return;
    auto key = std::make_tuple(tensor, need.type, need.form);
    if (seen.count(key)) return;
    ConstantSlot slot;
    slot.tensor = tensor;
    slot.type = need.type;
    slot.form = need.form;
    slot.bytes = ir::num_elements(t.shape) * storage_bytes(need.type);
    slot.offset = layout.constants_bytes;
    layout.constants_bytes += align_device(slot.bytes);
    seen[key] = layout.constants.size();
    layout.constants.push_back(slot);
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    for (size_t in = 0; in < step.inputs.size(); ++in) {
      need_constant(step.inputs[in], constant_need(step, lowering[i], in));
    }
    layout.scratch_bytes = std::max(layout.scratch_bytes, scratch_need(step, lowering[i]));
  }
  // Outputs that are constants themselves are read back as f32.
  for (int32_t t : plan.outputs) need_constant(t, ConstantNeed{});
  return layout;
}

}  // namespace cuvil::runtime::cuda
