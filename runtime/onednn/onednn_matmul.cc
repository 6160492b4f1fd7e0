// linear.onednn and matmul.onednn: oneDNN's matmul primitive. linear multiplies x[M, K] by the
// [N, K] weight read as a transposed [K, N] matrix (constant weights are reordered once to the
// primitive's preferred format); matmul broadcasts batch dims numpy-style as oneDNN does. Bias
// and the epilogue become post-ops where oneDNN supports them, else run after.
#include <string>

#include "base/error.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/onednn/onednn_common.h"
#include "runtime/onednn/onednn_kernels.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::onednn {

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
constexpr auto kF32 = dnnl::memory::data_type::f32;

ir::Shape left_pad(const ir::Shape& s, size_t rank) {
  ir::Shape out(rank > s.size() ? rank - s.size() : 0, 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

// Creates the primitive (post-ops first, plain if oneDNN rejects them) and reorders constant
// weights from `user_weights` into the primitive's format.
void finish(const Step& s, const dnnl::matmul::desc& desc,
            const std::function<bool(int, memory::desc*)>& operand_desc,
            const memory::desc& user_weights, const float* constant_weights, Prepared* p) {
  dnnl::matmul::primitive_desc pd;
  bool made = false;
  dnnl::post_ops ops;
  if (!s.epilogue.empty() && epilogue_post_ops(s, operand_desc, &ops, &p->operands)) {
    try {
      dnnl::primitive_attr attr = primitive_attr();
      attr.set_post_ops(ops);
      pd = dnnl::matmul::primitive_desc(desc, attr, cpu_engine());
      made = p->fused_epilogue = true;
    } catch (const dnnl::error&) {
      p->operands.clear();
    }
  }
  try {
    if (!made) pd = dnnl::matmul::primitive_desc(desc, primitive_attr(), cpu_engine());
  } catch (const dnnl::error& e) {
    throw UserError("node '" + s.node_name + "': oneDNN cannot run this product (" + e.what() +
                    ")");
  }
  p->primitive = dnnl::matmul(pd);
  p->scratchpad = pd.scratchpad_desc();
  p->weights = constant_weights ? pd.weights_desc() : user_weights;
  if (constant_weights) {
    memory user(user_weights, cpu_engine(), const_cast<float*>(constant_weights));
    p->weights_memory = memory(pd.weights_desc(), cpu_engine());
    dnnl::stream stream(cpu_engine());
    dnnl::reorder(user, p->weights_memory).execute(stream, user, p->weights_memory);
    stream.wait();
  }
}

Prepared make_linear(const Step& s, int threads, const float* const* constants) {
  use_threads(threads);
  const ir::Shape& out = s.output_shape;
  const int64_t n = s.input_shapes[1][0], k = s.input_shapes[1][1];
  const int64_t m = ir::num_elements(out) / n;
  Prepared p;
  p.src = dense_desc({m, k});
  p.dst = dense_desc({m, n});
  const memory::desc user_weights({k, n}, kF32, tag::ba);  // W[N, K] read as W^T
  const bool has_bias = cpu::has_operand(s, 2);
  if (has_bias) p.bias = dense_desc({1, n});
  const memory::desc weights = constants[1] ? memory::desc({k, n}, kF32, tag::any) : user_weights;
  const dnnl::matmul::desc desc = has_bias ? dnnl::matmul::desc(p.src, weights, p.bias, p.dst)
                                           : dnnl::matmul::desc(p.src, weights, p.dst);
  // The output is viewed as [M, N]: an operand must be the whole output or one row of it.
  auto operand_desc = [&](int input, memory::desc* d) {
    const ir::Shape os = out;
    const ir::Shape shape = left_pad(s.input_shapes[static_cast<size_t>(input)], os.size());
    if (shape.size() != os.size()) return false;
    if (shape == os) {
      *d = dense_desc({m, n});
      return true;
    }
    for (size_t i = 0; i + 1 < shape.size(); ++i) {
      if (shape[i] != 1) return false;
    }
    *d = dense_desc({1, shape.back()});
    return true;
  };
  finish(s, desc, operand_desc, user_weights, constants[1], &p);
  return p;
}

Prepared make_matmul(const Step& s, int threads, const float* const* constants) {
  use_threads(threads);
  (void)constants;  // matmul's operands are activations in our models: no weight reorder
  const ir::Shape& out = s.output_shape;
  const size_t rank = out.size();
  Prepared p;
  p.src = dense_desc(left_pad(s.input_shapes[0], rank));
  p.dst = dense_desc(out);
  const memory::desc user_weights = dense_desc(left_pad(s.input_shapes[1], rank));
  const dnnl::matmul::desc desc(p.src, user_weights, p.dst);
  auto operand_desc = [&](int input, memory::desc* d) {
    const ir::Shape shape = left_pad(s.input_shapes[static_cast<size_t>(input)], rank);
    if (shape.size() != rank) return false;
    *d = dense_desc(shape);
    return true;
  };
  finish(s, desc, operand_desc, user_weights, nullptr, &p);
  return p;
}

const float* const kNoConstants[64] = {};

const PreparedCache& cache_of(const KernelArgs& a, std::shared_ptr<const void>* local,
                              std::shared_ptr<const void> (*prepare)(const Step&,
                                                                     const float* const*)) {
  if (!a.step.prepared) *local = prepare(a.step, kNoConstants);
  return *static_cast<const PreparedCache*>(a.step.prepared ? a.step.prepared.get() : local->get());
}

}  // namespace

std::shared_ptr<const void> linear_prepare(const Step& step, const float* const* constants) {
  return std::make_shared<PreparedCache>(
      [step](int threads, const float* const* c) { return make_linear(step, threads, c); },
      constants[1] != nullptr, constants);
}

void linear(const KernelArgs& a) {
  std::shared_ptr<const void> local;
  const PreparedCache& cache = cache_of(a, &local, linear_prepare);
  execute(cache.get(a.pool.threads(), a.in), a, 1, cpu::has_operand(a.step, 2) ? 2 : -1);
}

std::shared_ptr<const void> matmul_prepare(const Step& step, const float* const* constants) {
  return std::make_shared<PreparedCache>(
      [step](int threads, const float* const* c) { return make_matmul(step, threads, c); }, false,
      constants);
}

void matmul(const KernelArgs& a) {
  std::shared_ptr<const void> local;
  const PreparedCache& cache = cache_of(a, &local, matmul_prepare);
  execute(cache.get(a.pool.threads(), a.in), a, 1, -1);
}

}  // namespace cuvil::runtime::onednn
