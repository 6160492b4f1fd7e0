#include "runtime/onednn/onednn_common.h"

#include <omp.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::onednn {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void use_threads(int threads) {
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

int default_threads() {
  return omp_get_max_threads();
}

dnnl::memory::desc dense_desc(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

bool epilogue_post_ops(const Step& step,
                       const std::function<bool(int input, dnnl::memory::desc*)>& operand_desc,
                       dnnl::post_ops* ops, std::vector<BinaryOperand>* operands) {
  using dnnl::algorithm;
  int index = 0;
  for (const ir::EpilogueStep& e : step.epilogue) {
    switch (e.op) {
      case ir::OpKind::relu:
        ops->append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
        break;
      case ir::OpKind::silu:
        ops->append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
        break;
      case ir::OpKind::gelu:
        ops->append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
        break;
      case ir::OpKind::sigmoid:
        ops->append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
        break;
      case ir::OpKind::tanh:
        ops->append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f);
        break;
      case ir::OpKind::sqrt:
        ops->append_eltwise(1.0f, algorithm::eltwise_sqrt, 0.0f, 0.0f);
        break;
      case ir::OpKind::exp:
        ops->append_eltwise(1.0f, algorithm::eltwise_exp, 0.0f, 0.0f);
        break;
      case ir::OpKind::abs:
        ops->append_eltwise(1.0f, algorithm::eltwise_abs, 0.0f, 0.0f);
        break;
      case ir::OpKind::clip:
        ops->append_eltwise(1.0f, algorithm::eltwise_clip_v2, e.params.a, e.params.b);
        break;
      case ir::OpKind::leaky_relu:
        ops->append_eltwise(1.0f, algorithm::eltwise_relu, e.params.a, 0.0f);
        break;
      case ir::OpKind::hard_swish:
        // oneDNN 2.6's hardswish is x * relu6(x + 3) / 6 (its alpha and beta are unused).
        ops->append_eltwise(1.0f, algorithm::eltwise_hardswish, 0.0f, 0.0f);
        break;
      case ir::OpKind::add:
      case ir::OpKind::sub:
      case ir::OpKind::mul:
      case ir::OpKind::div:
      case ir::OpKind::max:
      case ir::OpKind::min: {
        BinaryOperand b;
        b.post_op = index;
        b.input = e.input;
        if (!operand_desc(e.input, &b.desc)) return false;
        const algorithm alg = e.op == ir::OpKind::add   ? algorithm::binary_add
                              : e.op == ir::OpKind::sub ? algorithm::binary_sub
                              : e.op == ir::OpKind::mul ? algorithm::binary_mul
                              : e.op == ir::OpKind::max ? algorithm::binary_max
                              : e.op == ir::OpKind::min ? algorithm::binary_min
                                                        : algorithm::binary_div;
        ops->append_binary(alg, b.desc);
        operands->push_back(b);
        break;
      }
      default:
        operands->clear();  // the caller applies the whole epilogue after the primitive
        return false;
    }
    ++index;
  }
  return true;
}

PreparedCache::PreparedCache(Make make, bool constant_weights, const float* const* constants)
    : make_(std::move(make)), constant_weights_(constant_weights) {
  const int threads = default_threads();
  by_threads_[threads] = std::make_unique<Prepared>(make_(threads, constants));
}

const Prepared& PreparedCache::get(int threads, const float* const* inputs) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_threads_.find(threads);
  if (it != by_threads_.end()) return *it->second;
  // Constant weights are the step's input itself, unchanged since lowering.
  static const float* const kNone[64] = {};
  auto made = std::make_unique<Prepared>(make_(threads, constant_weights_ ? inputs : kNone));
  return *(by_threads_[threads] = std::move(made));
}

dnnl::primitive_attr primitive_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void execute(const Prepared& p, const KernelArgs& a, int weights_input, int bias_input) {
  use_threads(a.pool.threads());
  auto mem = [](const dnnl::memory::desc& d, const float* data) {
    return dnnl::memory(d, cpu_engine(), const_cast<float*>(data));
  };
  std::unordered_map<int, dnnl::memory> args;
  args[DNNL_ARG_SRC] = mem(p.src, a.in[0]);
  args[DNNL_ARG_WEIGHTS] =
      p.weights_memory ? p.weights_memory : mem(p.weights, a.in[weights_input]);
  if (bias_input >= 0) args[DNNL_ARG_BIAS] = mem(p.bias, a.in[bias_input]);
  args[DNNL_ARG_DST] = mem(p.dst, a.out);
  if (p.fused_epilogue) {
    for (const BinaryOperand& b : p.operands) {
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(b.post_op) | DNNL_ARG_SRC_1] = mem(b.desc, a.in[b.input]);
    }
  }
  const size_t scratch_bytes = p.scratchpad.get_size();
  if (scratch_bytes > 0) {
    // Grown, never shrunk: the largest scratchpad this thread's steps have needed.
    constexpr size_t kAlign = 64;  // a cache line, as oneDNN's own scratchpad
    thread_local std::vector<uint8_t> scratch;
    if (scratch.size() < scratch_bytes + kAlign) scratch.resize(scratch_bytes + kAlign);
    const uintptr_t base = reinterpret_cast<uintptr_t>(scratch.data());
    void* aligned = reinterpret_cast<void*>((base + kAlign - 1) & ~uintptr_t{kAlign - 1});
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(p.scratchpad, cpu_engine(), aligned);
  }
  thread_local dnnl::stream stream(cpu_engine());
  p.primitive.execute(stream, args);
  stream.wait();
  if (!p.fused_epilogue && !a.step.epilogue.empty()) {
    cpu::Epilogue(a.step, a.in, a.out).apply_all(a.pool);
  }
}

}  // namespace cuvil::runtime::onednn
