// conv2d 1x1, stride 1, unpadded: one GEMM per group, no data movement. NHWC: pixels x channels
// times W^T; NCHW: W times channels x pixels, per image. Bias and epilogue ride on the GEMM.
#include "runtime/cpu/conv_schedule.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/gemm_schedule.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/kernels.h"

namespace cuvil::runtime::cpu {

namespace {

void conv_1x1(const KernelArgs& a, const ConvGeometry& g) {
  const float* x = a.in[0];
  const float* w = a.in[1];
  const float* bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  const Epilogue epi(a.step, a.in, a.out);
  const int64_t hw = g.h * g.w;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    GemmProblem p;
    p.k = g.cg;
    p.epilogue = epi.empty() ? nullptr : &epi;
    if (g.nhwc) {
      p.m = g.n * hw, p.n = g.og;
      p.a = x + grp * g.cg, p.lda = g.c;
      p.b = w + grp * g.og * g.cg, p.ldb = g.cg, p.b_transposed = true;
      p.c = a.out + grp * g.og, p.ldc = g.o;
      p.bias = bias ? bias + grp * g.og : nullptr;
      p.blocking = scheduled_blocking(a.step, p.m);  // gemm-tiling
      gemm(p, a.pool);
    } else {
      for (int64_t img = 0; img < g.n; ++img) {
        p.m = g.og, p.n = hw;
        p.a = w + grp * g.og * g.cg, p.lda = g.cg;
        p.b = x + (img * g.c + grp * g.cg) * hw, p.ldb = hw;
        p.c = a.out + (img * g.o + grp * g.og) * hw, p.ldc = hw;
        p.bias = bias ? bias + grp * g.og : nullptr;
        p.bias_per_row = true;
        p.blocking = scheduled_blocking(a.step, p.m);
        gemm(p, a.pool);
      }
    }
  }
}

}  // namespace

bool conv2d_is_1x1(const Step& s) {
  const ConvGeometry g = conv_geometry(s);
  return !g.blocked && g.is_1x1_unit_stride();
}

void conv2d_gemm_1x1(const KernelArgs& a) {
  conv_1x1(a, scheduled_geometry(a.step));
}

}  // namespace cuvil::runtime::cpu
