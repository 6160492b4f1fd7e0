// bf16 linear, matmul and conv2d on gemm_bf16: weights converted and packed once in prepare.
#include <algorithm>

#include "runtime/cpu/batched_matmul.h"
#include "runtime/cpu/conv_bf16_direct.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/gemm_bf16.h"
#include "runtime/cpu/gemm_bf16_kernels.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/lowp_gemm_schedule.h"
#include "runtime/cpu/quantize_conv.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

std::shared_ptr<Bf16PackedWeights> pack_weights(const float* bt, int64_t n, int64_t k,
                                                ThreadPool* pool) {
  auto w = std::make_shared<Bf16PackedWeights>();
  w->k = k;
  w->n = n;
  w->words = AlignedArray<uint32_t>(bf16_packed_words(k, n));
  pack_b_bf16(bt, k, true, k, n, w->words.data(), pool);
  return w;
}

// A linear's weight [n, k], or a conv's flattened to [o, (kh, kw, c)], packed on `pool`.
std::shared_ptr<Bf16PackedWeights> pack_step_weights(const Step& step, const float* w, bool conv,
                                                     ThreadPool* pool) {
  if (!conv) {
    const ir::Shape& s = step.input_shapes[1];
    return pack_weights(w, s[0], s[1], pool);
  }
  const LowpConv g = lowp_conv(step);
  const std::vector<float> bt = conv_weight_khwc(g, w);
  return pack_weights(bt.data(), g.o, g.k(), pool);
}

// The step's packed weights: made at lowering, or (weights that are not constants) now, on the
// kernel's pool.
std::shared_ptr<const Bf16PackedWeights> weights_of(const KernelArgs& a, bool conv) {
  if (a.step.prepared) return std::static_pointer_cast<const Bf16PackedWeights>(a.step.prepared);
  return pack_step_weights(a.step, a.in[1], conv, &a.pool);
}

}  // namespace

// gemm_bf16 runs on VDPBF16PS, or without AVX512_BF16 on its pairs widened to fp32.
bool bf16_supported(const Step&) {
  return cpu_has_avx512();
}

bool conv2d_bf16_supported(const Step& step) {
  return cpu_has_avx512() && lowp_conv_shape_ok(step);
}

std::shared_ptr<const void> prepare_linear_bf16(const Step& step, const float* const* constants) {
  if (!constants[1]) return nullptr;
  return pack_step_weights(step, constants[1], false,
                           preparing_pool(ir::num_elements(step.input_shapes[1])).get());
}

std::shared_ptr<const void> prepare_conv2d_bf16(const Step& step, const float* const* constants) {
  if (!constants[1]) return nullptr;
  if (const LowpSchedule& schedule = scheduled_lowp(step); schedule.bf16_direct) {
    return pack_bf16_direct_weights(schedule.conv, constants[1]);
  }
  return pack_step_weights(step, constants[1], true,
                           preparing_pool(ir::num_elements(step.input_shapes[1])).get());
}

void linear_bf16(const KernelArgs& a) {
  const auto w = weights_of(a, false);
  const Epilogue epi(a.step, a.in, a.out);
  Bf16Gemm g;
  g.n = w->n;
  g.k = w->k;
  g.m = ir::num_elements(a.step.output_shape) / g.n;
  g.a = a.in[0], g.lda = g.k;
  g.b = w->words.data();
  g.c = a.out, g.ldc = g.n;
  g.bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  g.epilogue = epi.empty() ? nullptr : &epi;
  g.blocking = scheduled_lowp(a.step).bf16;
  gemm_bf16(g, a.pool);
}

void matmul_bf16(const KernelArgs& a) {
  const BatchedMatmul mm(a.step);
  const int64_t m = mm.m, k = mm.k, n = mm.n;
  const Epilogue epi(a.step, a.in, a.out);
  const Bf16Blocking blocking = scheduled_lowp(a.step).bf16;
  // Both operands are activations: B is converted and packed per product.
  uint32_t* packed = reinterpret_cast<uint32_t*>(a.pool.scratch(
      a.pool.current_thread(), ThreadPool::kKernel, static_cast<size_t>(bf16_packed_words(k, n))));
  int64_t packed_offset = -1;
  for (int64_t bi = 0; bi < mm.batches; ++bi) {
    const int64_t bo = mm.b_offset(bi);
    if (bo != packed_offset) {  // consecutive products often share B (broadcast batch dims)
      pack_b_bf16(a.in[1] + bo, n, false, k, n, packed, &a.pool);
      packed_offset = bo;
    }
    Bf16Gemm g;
    g.m = m, g.n = n, g.k = k;
    g.a = a.in[0] + mm.a_offset(bi), g.lda = k;
    g.b = packed;
    g.c = a.out + mm.c_offset(bi), g.ldc = n;
    g.epilogue = epi.empty() ? nullptr : &epi;
    g.blocking = blocking;
    gemm_bf16(g, a.pool);
  }
}

void conv2d_bf16(const KernelArgs& a) {
  const LowpSchedule& schedule = scheduled_lowp(a.step);
  const LowpConv& cg = schedule.conv;
  const Epilogue epi(a.step, a.in, a.out);
  const float* bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  if (schedule.bf16_direct) {  // few input channels: no im2col (conv_bf16_direct.h)
    const auto w = a.step.prepared
                       ? std::static_pointer_cast<const Bf16DirectWeights>(a.step.prepared)
                       : pack_bf16_direct_weights(cg, a.in[1]);
    conv2d_bf16_direct(cg, *w, a.in[0], bias, epi, a.out, a.pool);
    return;
  }
  const auto w = weights_of(a, true);
  Bf16Gemm g;
  g.blocking = schedule.bf16;
  g.n = cg.o, g.k = cg.k();
  g.b = w->words.data();
  g.ldc = cg.o;
  g.bias = bias;
  g.epilogue = epi.empty() ? nullptr : &epi;
  if (cg.is_1x1()) {
    g.m = cg.n * cg.h * cg.w;
    g.a = a.in[0], g.lda = cg.c;
    g.c = a.out;
    gemm_bf16(g, a.pool);
    return;
  }
  const int64_t ohw = cg.oh * cg.ow;
  if (bf16_conv_gathers_in_place(cg)) {
    // Every output pixel in one product, A gathered from the input as it is packed.
    g.m = cg.n * ohw;
    g.a = a.in[0];
    g.im2col = &cg;
    g.c = a.out;
    gemm_bf16(g, a.pool);
    return;
  }
  // A few pixels, or AMX tiles (which take A row-major): im2col blocks in a column buffer.
  const int64_t pb = schedule.pixel_block;
  float* col =
      a.pool.scratch(a.pool.current_thread(), ThreadPool::kKernel, static_cast<size_t>(pb * g.k));
  for (int64_t img = 0; img < cg.n; ++img) {
    for (int64_t p0 = 0; p0 < ohw; p0 += pb) {
      const int64_t np = std::min(pb, ohw - p0);
      a.pool.parallel_for(np, [&](int64_t b, int64_t e) {
        im2col_khwc<float>(cg, a.in[0], img, p0, np, 0.0f, col, g.k, b, e);
      });
      g.m = np;
      g.a = col, g.lda = g.k;
      g.c = a.out + (img * ohw + p0) * cg.o;
      gemm_bf16(g, a.pool);
    }
  }
}

}  // namespace cuvil::runtime::cpu
