// int8 linear and conv2d on gemm_int8: weights quantised per output channel once in prepare,
// activations quantised per tensor per call (dynamic), dequantised with bias and epilogue in fp32.
#include <algorithm>

#include "runtime/cpu/gemm_bf16_kernels.h"
#include "runtime/cpu/gemm_int8.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/lowp_gemm_schedule.h"
#include "runtime/cpu/quantize_conv.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

std::shared_ptr<const Int8PackedWeights> weights_of(const KernelArgs& a, bool conv) {
  if (a.step.prepared) return std::static_pointer_cast<const Int8PackedWeights>(a.step.prepared);
  const float* constants[2] = {nullptr, a.in[1]};
  return std::static_pointer_cast<const Int8PackedWeights>(
      conv ? prepare_conv2d_int8(a.step, constants) : prepare_linear_int8(a.step, constants));
}

uint8_t* u8_scratch(ThreadPool& pool, ThreadPool::Slot slot, int64_t count) {
  return reinterpret_cast<uint8_t*>(pool.scratch(
      pool.current_thread(), slot, static_cast<size_t>((u8_buffer_bytes(count) + 3) / 4)));
}

}  // namespace

bool linear_int8_supported(const Step&) {
  return cpu_has_avx512_vnni();
}

bool conv2d_int8_supported(const Step& step) {
  return cpu_has_avx512_vnni() && lowp_conv_shape_ok(step);
}

std::shared_ptr<const void> prepare_linear_int8(const Step& step, const float* const* constants) {
  if (!constants[1]) return nullptr;
  const ir::Shape& w = step.input_shapes[1];
  return quantize_pack_int8(constants[1], w[0], w[1], w[1]);
}

std::shared_ptr<const void> prepare_conv2d_int8(const Step& step, const float* const* constants) {
  if (!constants[1]) return nullptr;
  const LowpConv g = lowp_conv(step);
  const std::vector<float> bt = conv_weight_khwc(g, constants[1]);
  return quantize_pack_int8(bt.data(), g.o, g.k(), g.k());
}

void linear_int8(const KernelArgs& a) {
  const auto w = weights_of(a, false);
  const Epilogue epi(a.step, a.in, a.out);
  const int64_t m = ir::num_elements(a.step.output_shape) / w->n;
  const int64_t count = m * w->k;
  Int8Gemm g;
  g.m = m;
  g.mc = scheduled_lowp(a.step).int8_mc;
  g.partition = scheduled_lowp(a.step).int8_partition;
  g.aq = choose_activation_quant(a.in[0], count, a.pool);
  uint8_t* aq = u8_scratch(a.pool, ThreadPool::kKernel, count);
  quantize_u8(a.in[0], count, g.aq, aq, a.pool);
  g.a = aq, g.lda = w->k;
  g.b = w.get();
  g.c = a.out, g.ldc = w->n;
  g.bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  g.epilogue = epi.empty() ? nullptr : &epi;
  gemm_int8(g, a.pool);
}

void conv2d_int8(const KernelArgs& a) {
  const LowpSchedule& schedule = scheduled_lowp(a.step);
  const LowpConv& cg = schedule.conv;
  const auto w = weights_of(a, true);
  const Epilogue epi(a.step, a.in, a.out);
  const int64_t count = cg.n * cg.h * cg.w * cg.c;
  Int8Gemm g;
  g.mc = schedule.int8_mc;
  g.partition = schedule.int8_partition;
  g.aq = choose_activation_quant(a.in[0], count, a.pool);
  uint8_t* xq = u8_scratch(a.pool, ThreadPool::kKernel2, count);
  quantize_u8(a.in[0], count, g.aq, xq, a.pool);
  g.b = w.get();
  g.ldc = cg.o;
  g.bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  g.epilogue = epi.empty() ? nullptr : &epi;
  if (cg.is_1x1()) {
    g.m = cg.n * cg.h * cg.w;
    g.a = xq, g.lda = cg.c;
    g.c = a.out;
    gemm_int8(g, a.pool);
    return;
  }
  const int64_t k = cg.k();
  const int64_t ohw = cg.oh * cg.ow;
  const int64_t pb = schedule.pixel_block;
  uint8_t* col = u8_scratch(a.pool, ThreadPool::kKernel, pb * k);
  // Taps in the padding hold real zeros, which quantise to the zero point.
  const uint8_t pad = static_cast<uint8_t>(g.aq.zero_point);
  for (int64_t img = 0; img < cg.n; ++img) {
    for (int64_t p0 = 0; p0 < ohw; p0 += pb) {
      const int64_t np = std::min(pb, ohw - p0);
      a.pool.parallel_for(np, [&](int64_t b, int64_t e) {
        im2col_khwc<uint8_t>(cg, xq, img, p0, np, pad, col, k, b, e);
      });
      g.m = np;
      g.a = col, g.lda = k;
      g.c = a.out + (img * ohw + p0) * cg.o;
      gemm_int8(g, a.pool);
    }
  }
}

}  // namespace cuvil::runtime::cpu
