// conv2d.onednn: oneDNN's forward-inference convolution on our NHWC or NCHW activations (plain
// memory formats, so no reorders of activations), weights reordered once to the primitive's
// blocked format, bias and the epilogue fused as post-ops where oneDNN supports them.
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/onednn/onednn_common.h"
#include "runtime/onednn/onednn_kernels.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::onednn {

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
constexpr auto kF32 = dnnl::memory::data_type::f32;

// oneDNN 2.6's gemm-based convolution on nhwc activations reads a binary post-op operand that
// varies over the pixels (a residual) at the wrong offsets; it picks that implementation on CPUs
// without AVX-512 (seen on a Zen 3 EPYC: errors of 4 against its own reference implementation,
// per-channel operands correct). There the epilogue runs after the primitive instead.
bool misapplies_pixel_operands(const dnnl::convolution_forward::primitive_desc& pd, bool nhwc,
                               const std::vector<BinaryOperand>& operands) {
  if (!nhwc || std::string(pd.impl_info_str()).find("gemm") == std::string::npos) return false;
  for (const BinaryOperand& b : operands) {
    const memory::dims dims = b.desc.dims();
    if (dims.size() == 4 && dims[2] * dims[3] > 1) return true;
  }
  return false;
}

Prepared make_conv(const Step& s, int threads, const float* const* constants) {
  use_threads(threads);
  const cpu::ConvGeometry g = cpu::conv_geometry(s);
  const tag act = g.nhwc ? tag::nhwc : tag::nchw;
  Prepared p;
  p.src = memory::desc({g.n, g.c, g.h, g.w}, kF32, act);
  p.dst = memory::desc({g.n, g.o, g.oh, g.ow}, kF32, act);
  const memory::dims wdims = g.groups == 1 ? memory::dims{g.o, g.cg, g.kh, g.kw}
                                           : memory::dims{g.groups, g.og, g.cg, g.kh, g.kw};
  const memory::desc user_weights(wdims, kF32, g.groups == 1 ? tag::oihw : tag::goihw);
  const bool constant_weights = constants[1] != nullptr;
  const bool has_bias = cpu::has_operand(s, 2);
  if (has_bias) p.bias = memory::desc({g.o}, kF32, tag::x);
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, p.src,
      constant_weights ? memory::desc(wdims, kF32, tag::any) : user_weights, p.bias, p.dst,
      {g.sh, g.sw}, {g.dh - 1, g.dw - 1}, {g.ph, g.pw}, {g.ph, g.pw});  // oneDNN: 0 = undilated

  // A binary operand broadcasts (numpy rules) against the physical output [N, H, W, C] or
  // [N, C, H, W]; oneDNN wants logical N, C, H, W dims with the same physical format.
  auto operand_desc = [&](int input, memory::desc* d) {
    const ir::Shape& shape = s.input_shapes[static_cast<size_t>(input)];
    if (shape.size() > 4) return false;
    ir::Shape ph(4 - shape.size(), 1);
    ph.insert(ph.end(), shape.begin(), shape.end());
    const memory::dims logical = g.nhwc ? memory::dims{ph[0], ph[3], ph[1], ph[2]}
                                        : memory::dims{ph[0], ph[1], ph[2], ph[3]};
    *d = memory::desc(logical, kF32, act);
    return true;
  };
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::post_ops ops;
  bool made = false;
  if (!s.epilogue.empty() && epilogue_post_ops(s, operand_desc, &ops, &p.operands)) {
    try {
      dnnl::primitive_attr attr = primitive_attr();
      attr.set_post_ops(ops);
      pd = dnnl::convolution_forward::primitive_desc(desc, attr, cpu_engine());
      made = p.fused_epilogue = !misapplies_pixel_operands(pd, g.nhwc, p.operands);
      if (!made) p.operands.clear();
    } catch (const dnnl::error&) {
      p.operands.clear();  // this post-op chain is not implemented: apply the epilogue after
    }
  }
  try {
    if (!made) pd = dnnl::convolution_forward::primitive_desc(desc, primitive_attr(), cpu_engine());
  } catch (const dnnl::error& e) {
    throw UserError("node '" + s.node_name + "': oneDNN cannot run this convolution (" + e.what() +
                    ")");
  }
  p.primitive = dnnl::convolution_forward(pd);
  p.scratchpad = pd.scratchpad_desc();
  p.weights = constant_weights ? pd.weights_desc() : user_weights;
  if (constant_weights) {
    memory user(user_weights, cpu_engine(), const_cast<float*>(constants[1]));
    p.weights_memory = memory(pd.weights_desc(), cpu_engine());
    dnnl::stream stream(cpu_engine());
    dnnl::reorder(user, p.weights_memory).execute(stream, user, p.weights_memory);
    stream.wait();
  }
  return p;
}

}  // namespace

std::shared_ptr<const void> conv2d_prepare(const Step& step, const float* const* constants) {
  return std::make_shared<PreparedCache>(
      [step](int threads, const float* const* c) { return make_conv(step, threads, c); },
      constants[1] != nullptr, constants);
}

void conv2d(const KernelArgs& a) {
  std::shared_ptr<const void> local;
  if (!a.step.prepared) {
    static const float* const kNone[64] = {};
    local = conv2d_prepare(a.step, kNone);
  }
  const auto* cache =
      static_cast<const PreparedCache*>(a.step.prepared ? a.step.prepared.get() : local.get());
  execute(cache->get(a.pool.threads(), a.in), a, 1, cpu::has_operand(a.step, 2) ? 2 : -1);
}

}  // namespace cuvil::runtime::onednn
