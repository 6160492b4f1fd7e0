// The per-op launch builders of the GPU executor (build_step_launches, executor_state.h), one
// file per op family: step_launches.cc (the dispatch, elementwise ops, epilogues and the helpers
// below), step_launches_gemm.cc (linear, matmul: cuBLAS, cuBLASLt, generated GEMMs),
// step_launches_conv.cc (cuDNN and generated convolutions), step_launches_norm.cc (attention,
// norms, softmax), step_launches_data.cc (pooling, resampling, data movement). Internal to
// runtime/cuda/gpu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/codegen/gemm.h"
#include "runtime/cuda/gpu/executor_state.h"

namespace cuvil::runtime::cuda::step_launch {

namespace sk = simple;

// Everything one step's builder reads and the launches it appends to.
struct Ctx {
  DeviceState& s;
  const Plan& plan;
  const DeviceLayout& layout;
  const Step& step;
  StepLowering& lowering;
  std::vector<Launch>& out;
  const float* in(size_t i) const {
    return static_cast<const float*>(input_pointer(s, plan, layout, step, lowering, i));
  }
  const void* raw(size_t i) const { return input_pointer(s, plan, layout, step, lowering, i); }
  float* y() const {
    return reinterpret_cast<float*>(s.tensor_f32[static_cast<size_t>(step.output)]);
  }
  const ir::Shape& shape(size_t i) const { return step.input_shapes[i]; }
  size_t own_inputs() const {
    return step.inputs.size() - ir::epilogue_operand_count(step.epilogue);
  }
  bool input_is_constant(size_t i) const {
    return plan.tensors[static_cast<size_t>(step.inputs[i])].storage ==
           PlanTensor::Storage::constant;
  }
};

[[noreturn]] void unsupported(const Step& step, const std::string& why);
int64_t normalize_axis(int64_t axis, size_t rank);
int64_t product(const ir::Shape& s, size_t begin, size_t end);
bool is_nhwc(const Step& step);
int to_int(const Step& step, int64_t v, const char* what);
Launch ew_launch(const DeviceState& s, const Step& step, sk::EwOp op, const float* a,
                 const ir::Shape& a_shape, const float* b, const ir::Shape& b_shape, float* y,
                 const ir::Shape& out);
sk::EwOp ew_op(const Step& step, ir::OpKind op);
Launch convert_launch(const DeviceState& s, const void* src, StorageType from, void* dst,
                      StorageType to, int64_t count);
codegen::ElemType elem_type(StorageType t);
codegen::GemmTiles gemm_tiles(const Step& step);
Launch generated_launch(DeviceState& s, const codegen::KernelSource& source,
                        const codegen::LaunchGeometry& geometry, const void* params, size_t size);
// Operands converted into scratch for 16-bit GEMMs: returns (pointer, next free scratch byte).
const void* converted(Ctx& c, size_t input, StorageType type, int64_t* scratch_offset);
void add_bias(Ctx& c, size_t bias_input, const ir::Shape& bias_shape_in_result);

// The builders, by op family.
void build_linear(Ctx& c);
void build_matmul(Ctx& c);
void build_conv(Ctx& c);
void build_sdpa(Ctx& c);
void build_norm(Ctx& c);
void build_softmax(Ctx& c);
void build_pool(Ctx& c);
void build_upsample(Ctx& c);
void build_concat(Ctx& c);
void build_slice(Ctx& c);
void build_transpose(Ctx& c);
void build_rope(Ctx& c);
void build_embedding(Ctx& c);
void build_reshape(Ctx& c);
void build_epilogue(Ctx& c);

}  // namespace cuvil::runtime::cuda::step_launch
