// conv2d through im2col in blocks of output pixels (bounded scratch) and the packed GEMM, for any
// geometry (dilated too); and conv2d.auto, which sends 1x1 stride-1 unpadded convolutions to the
// GEMM directly (conv_1x1.cc) and blocked nchw16c ones to their direct kernel. Bias and epilogue
// are applied by the GEMM to each finished output block.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/conv_kernels.h"
#include "runtime/cpu/conv_schedule.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/gemm_schedule.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/kernels.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

using Conv = ConvGeometry;

// Output pixels per im2col block: keeps the column buffer near 8 MiB.
int64_t pixel_block(const Conv& g, int64_t k) {
  constexpr int64_t kColFloats = int64_t{1} << 21;
  const int64_t pixels = g.oh * g.ow;
  return std::clamp<int64_t>(kColFloats / std::max<int64_t>(k, 1), std::min<int64_t>(64, pixels),
                             pixels);
}

// NCHW column block: col[k][p] for k = (c, kh, kw) of group grp and output pixels p0 .. p0+np.
void im2col_nchw(const Conv& g, const float* x, int64_t img, int64_t grp, int64_t p0, int64_t np,
                 float* col, ThreadPool& pool) {
  const int64_t khw = g.kh * g.kw;
  pool.parallel_for(g.cg * khw, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t c = k / khw, ki = (k % khw) / g.kw, kj = k % g.kw;
      const float* plane = x + (img * g.c + grp * g.cg + c) * g.h * g.w;
      float* dst = col + k * np;
      for (int64_t p = 0; p < np; ++p) {
        const int64_t oy = (p0 + p) / g.ow, ox = (p0 + p) % g.ow;
        const int64_t iy = oy * g.sh - g.ph + ki * g.dh, ix = ox * g.sw - g.pw + kj * g.dw;
        dst[p] = (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? plane[iy * g.w + ix] : 0.0f;
      }
    }
  });
}

// NHWC column block: col[p][k] with k = (c, kh, kw) to match the weight's order.
void im2col_nhwc(const Conv& g, const float* x, int64_t img, int64_t grp, int64_t p0, int64_t np,
                 float* col, ThreadPool& pool) {
  const int64_t khw = g.kh * g.kw;
  const int64_t k = g.cg * khw;
  pool.parallel_for(np, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t oy = (p0 + p) / g.ow, ox = (p0 + p) % g.ow;
      float* dst = col + p * k;
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const int64_t ix = ox * g.sw - g.pw + kj * g.dw;
          float* d = dst + ki * g.kw + kj;
          if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
            for (int64_t c = 0; c < g.cg; ++c) d[c * khw] = 0.0f;
          } else {
            const float* src = x + ((img * g.h + iy) * g.w + ix) * g.c + grp * g.cg;
            for (int64_t c = 0; c < g.cg; ++c) d[c * khw] = src[c];
          }
        }
      }
    }
  });
}

void conv_im2col(const KernelArgs& a, const Conv& g) {
  const float* x = a.in[0];
  const float* w = a.in[1];
  const float* bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  const Epilogue epi(a.step, a.in, a.out);
  const int64_t k = g.cg * g.kh * g.kw;
  const int64_t ohw = g.oh * g.ow;
  const int64_t pb = pixel_block(g, k);
  float* col =
      a.pool.scratch(a.pool.current_thread(), ThreadPool::kKernel, static_cast<size_t>(pb * k));
  for (int64_t img = 0; img < g.n; ++img) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      for (int64_t p0 = 0; p0 < ohw; p0 += pb) {
        const int64_t np = std::min(pb, ohw - p0);
        GemmProblem p;
        p.k = k;
        p.epilogue = epi.empty() ? nullptr : &epi;
        p.bias = bias ? bias + grp * g.og : nullptr;
        if (g.nhwc) {
          im2col_nhwc(g, x, img, grp, p0, np, col, a.pool);
          p.m = np, p.n = g.og;
          p.a = col, p.lda = k;
          p.b = w + grp * g.og * k, p.ldb = k, p.b_transposed = true;
          p.c = a.out + (img * ohw + p0) * g.o + grp * g.og, p.ldc = g.o;
        } else {
          im2col_nchw(g, x, img, grp, p0, np, col, a.pool);
          p.m = g.og, p.n = np;
          p.a = w + grp * g.og * k, p.lda = k;
          p.b = col, p.ldb = np;
          p.c = a.out + (img * g.o + grp * g.og) * ohw + p0, p.ldc = ohw;
          p.bias_per_row = true;
        }
        p.blocking = scheduled_blocking(a.step, p.m);  // gemm-tiling
        gemm(p, a.pool);
      }
    }
  }
}

}  // namespace

void conv2d_auto(const KernelArgs& a) {
  const ConvGeometry& g = scheduled_geometry(a.step);
  if (g.blocked) {
    conv2d_direct_nchw16c(a);  // the blocked layout's only kernel
  } else if (g.is_1x1_unit_stride()) {
    conv2d_gemm_1x1(a);
  } else {
    conv_im2col(a, g);
  }
}

void conv2d_im2col(const KernelArgs& a) {
  conv_im2col(a, scheduled_geometry(a.step));
}

bool conv2d_unblocked(const Step& step) {
  return !is_nchw16c(step);
}

}  // namespace cuvil::runtime::cpu
