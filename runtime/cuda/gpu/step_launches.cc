// Per-op launch builders of the GPU executor: the dispatch, elementwise ops, epilogues and the
// helpers the op families share (step_launch_builders.h lists the families' files). Every
// geometry is derived from the step's shapes; every pointer comes from the DeviceLayout. Nothing
// here allocates or synchronises inside a Launch (capture-safe); descriptors, algorithm choices
// and kernel compilation happen while the launches are built.
#include "runtime/cuda/gpu/step_launch_builders.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "runtime/cuda/attrs.h"
#include "runtime/cuda/gpu/executor_state.h"

namespace cuvil::runtime::cuda {
namespace step_launch {

using ir::OpKind;
using ir::Shape;

namespace {

// Element strides of `in` broadcast (numpy rules, right-aligned) to `out`.
void broadcast_strides(const Step& step, const Shape& in, const Shape& out, int64_t* strides) {
  const size_t rank = out.size();
  int64_t stride = 1;
  for (size_t k = 0; k < rank; ++k) {
    const size_t d = rank - 1 - k;
    strides[d] = 0;
    if (k < in.size()) {
      const int64_t dim = in[in.size() - 1 - k];
      if (dim != 1 && dim != out[d]) unsupported(step, "operand does not broadcast to the result");
      strides[d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
}

int64_t type_code(StorageType t) {
  return t == StorageType::f32 ? 0 : t == StorageType::bf16 ? 1 : 2;
}

}  // namespace

[[noreturn]] void unsupported(const Step& step, const std::string& why) {
  throw UserError("node '" + step.node_name + "' (" + std::string(ir::to_string(step.op)) +
                  ") cannot run on CUDA: " + why);
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) p *= s[i];
  return p;
}

bool is_nhwc(const Step& step) {
  const std::string layout = step.attrs.get_string("layout", "nchw");
  if (layout != "nchw" && layout != "nhwc") {
    unsupported(step, "layout '" + layout + "' (the CUDA backend runs nchw and nhwc)");
  }
  return layout == "nhwc";
}

int to_int(const Step& step, int64_t v, const char* what) {
  if (v > INT32_MAX) unsupported(step, std::string(what) + " exceeds 2^31");
  return static_cast<int>(v);
}

Launch ew_launch(const DeviceState& s, const Step& step, sk::EwOp op, const float* a,
                 const Shape& a_shape, const float* b, const Shape& b_shape, float* y,
                 const Shape& out) {
  if (out.size() > static_cast<size_t>(sk::kMaxRank)) unsupported(step, "rank above 8");
  sk::EwParams p{};
  p.a = a;
  p.b = b;
  p.y = y;
  p.total = ir::num_elements(out);
  p.rank = static_cast<int64_t>(std::max<size_t>(out.size(), 1));
  p.op = op;
  if (out.empty()) {
    p.dims[0] = 1;
  } else {
    for (size_t d = 0; d < out.size(); ++d) p.dims[d] = out[d];
    broadcast_strides(step, a_shape, out, p.a_strides);
    if (b != nullptr) broadcast_strides(step, b_shape, out, p.b_strides);
  }
  return simple_launch(*s.simple, "cuvil_ew", dim3(sk::grid_for(p.total)), dim3(sk::kThreads), p);
}

sk::EwOp ew_op(const Step& step, OpKind op) {
  switch (op) {
    case OpKind::add:
      return sk::kAdd;
    case OpKind::sub:
      return sk::kSub;
    case OpKind::mul:
      return sk::kMul;
    case OpKind::div:
      return sk::kDiv;
    case OpKind::relu:
      return sk::kRelu;
    case OpKind::silu:
      return sk::kSilu;
    case OpKind::gelu:
      return sk::kGelu;
    case OpKind::sigmoid:
      return sk::kSigmoid;
    default:
      unsupported(step, "not an elementwise op");
  }
}

Launch convert_launch(const DeviceState& s, const void* src, StorageType from, void* dst,
                      StorageType to, int64_t count) {
  sk::ConvertParams p{src, dst, count, type_code(from), type_code(to)};
  return simple_launch(*s.simple, "cuvil_convert", dim3(sk::grid_for(count)), dim3(sk::kThreads),
                       p);
}

codegen::ElemType elem_type(StorageType t) {
  return t == StorageType::f32    ? codegen::ElemType::f32
         : t == StorageType::bf16 ? codegen::ElemType::bf16
                                  : codegen::ElemType::f16;
}

codegen::GemmTiles gemm_tiles(const Step& step) {
  codegen::GemmTiles t;
  t.block_m = static_cast<int>(step.attrs.get_int(attrs::kGemmBlockM, t.block_m));
  t.block_n = static_cast<int>(step.attrs.get_int(attrs::kGemmBlockN, t.block_n));
  t.block_k = static_cast<int>(step.attrs.get_int(attrs::kGemmBlockK, t.block_k));
  t.warp_m = static_cast<int>(step.attrs.get_int(attrs::kGemmWarpM, t.warp_m));
  t.warp_n = static_cast<int>(step.attrs.get_int(attrs::kGemmWarpN, t.warp_n));
  t.stages = static_cast<int>(step.attrs.get_int(attrs::kGemmStages, t.stages));
  t.vector_width = static_cast<int>(step.attrs.get_int(attrs::kGemmVectorWidth, t.vector_width));
  return t;
}

Launch generated_launch(DeviceState& s, const codegen::KernelSource& source,
                        const codegen::LaunchGeometry& geometry, const void* params, size_t size) {
  codegen::LoadedKernel* kernel = s.load(source);
  auto bytes = std::make_shared<std::vector<char>>(static_cast<const char*>(params),
                                                   static_cast<const char*>(params) + size);
  return [kernel, geometry, bytes](cudaStream_t stream) {
    kernel->launch(geometry, bytes->data(), stream);
  };
}

// Operands converted into scratch for 16-bit GEMMs: returns (pointer, next free scratch byte).
const void* converted(Ctx& c, size_t input, StorageType type, int64_t* scratch_offset) {
  if (type == StorageType::f32) return c.in(input);
  // Constant weights were uploaded in the step's type (layout_device_memory).
  if (input == 1 && c.input_is_constant(1) && c.step.op != OpKind::matmul) return c.raw(1);
  const int64_t count = ir::num_elements(c.shape(input));
  char* dst = c.s.scratch.get() + *scratch_offset;
  *scratch_offset += align_device(count * storage_bytes(type));
  CUVIL_CHECK(*scratch_offset <= c.s.scratch.bytes(), "scratch smaller than layout said");
  c.out.push_back(convert_launch(c.s, c.in(input), StorageType::f32, dst, type, count));
  return dst;
}

void add_bias(Ctx& c, size_t bias_input, const Shape& bias_shape_in_result) {
  c.out.push_back(ew_launch(c.s, c.step, sk::kAdd, c.y(), c.step.output_shape, c.in(bias_input),
                            bias_shape_in_result, c.y(), c.step.output_shape));
}

void build_epilogue(Ctx& c) {
  for (const ir::EpilogueStep& e : c.step.epilogue) {
    const sk::EwOp op = ew_op(c.step, e.op);
    if (ir::is_unary_elementwise(e.op)) {
      c.out.push_back(ew_launch(c.s, c.step, op, c.y(), c.step.output_shape, nullptr, {}, c.y(),
                                c.step.output_shape));
    } else {
      const size_t in = static_cast<size_t>(e.input);
      c.out.push_back(ew_launch(c.s, c.step, op, c.y(), c.step.output_shape, c.in(in), c.shape(in),
                                c.y(), c.step.output_shape));
    }
  }
}

}  // namespace step_launch

using namespace step_launch;  // NOLINT: the builders, in the dispatch below

const void* input_pointer(const DeviceState& s, const Plan& plan, const DeviceLayout& layout,
                          const Step& step, const StepLowering& lowering, size_t input) {
  const int32_t t = step.inputs[input];
  const PlanTensor& pt = plan.tensors[static_cast<size_t>(t)];
  if (pt.storage != PlanTensor::Storage::constant) return s.tensor_f32[static_cast<size_t>(t)];
  const ConstantNeed need = constant_need(step, lowering, input);
  const ConstantSlot* slot = layout.find(t, need.type, need.form);
  CUVIL_CHECK(slot != nullptr,
              "constant '" + pt.name + "' was not laid out for node '" + step.node_name + "'");
  return s.constants.get() + slot->offset;
}

std::vector<Launch> build_step_launches(DeviceState& s, const Plan& plan,
                                        const DeviceLayout& layout, size_t index,
                                        StepLowering& lowering) {
  const Step& step = plan.steps[index];
  std::vector<Launch> out;
  if (ir::num_elements(step.output_shape) == 0) return out;
  Ctx c{s, plan, layout, step, lowering, out};
  switch (step.op) {
    case OpKind::linear:
      build_linear(c);
      break;
    case OpKind::matmul:
      build_matmul(c);
      break;
    case OpKind::conv2d:
      build_conv(c);
      break;
    case OpKind::sdpa:
      build_sdpa(c);
      break;
    case OpKind::layer_norm:
    case OpKind::rms_norm:
    case OpKind::group_norm:
    case OpKind::batch_norm:
      build_norm(c);
      break;
    case OpKind::softmax:
      build_softmax(c);
      break;
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
    case OpKind::global_avg_pool:
      build_pool(c);
      break;
    case OpKind::upsample_nearest2d:
      build_upsample(c);
      break;
    case OpKind::concat:
      build_concat(c);
      break;
    case OpKind::slice:
      build_slice(c);
      break;
    case OpKind::reshape:
      build_reshape(c);
      break;
    case OpKind::transpose:
      build_transpose(c);
      break;
    case OpKind::rope:
      build_rope(c);
      break;
    case OpKind::embedding:
      build_embedding(c);
      break;
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
      out.push_back(ew_launch(s, step, ew_op(step, step.op), c.in(0), c.shape(0), c.in(1),
                              c.shape(1), c.y(), step.output_shape));
      break;
    case OpKind::relu:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::sigmoid:
      out.push_back(ew_launch(s, step, ew_op(step, step.op), c.in(0), c.shape(0), nullptr, {},
                              c.y(), step.output_shape));
      break;
    default:
      // The ops imported models add (tanh, clip, reductions, pad, gather, ...) run on the CPU
      // target only so far.
      unsupported(step, "no CUDA kernel for this op yet (the CPU target runs it)");
  }
  build_epilogue(c);
  return out;
}

}  // namespace cuvil::runtime::cuda
