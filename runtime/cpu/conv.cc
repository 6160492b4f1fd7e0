// conv2d: 1x1 stride-1 unpadded convolutions are one GEMM per group (NHWC: pixels x channels
// times W^T; NCHW: W times channels x pixels per image); everything else goes through im2col in
// blocks of output pixels (bounded scratch) and the same GEMM. Bias and epilogue are applied by
// the GEMM to each finished output block.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/gemm.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/kernels.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

struct Conv {
  bool nhwc;
  int64_t n, c, h, w;      // input
  int64_t o, kh, kw;       // weight [o, c/groups, kh, kw]
  int64_t oh, ow;          // output
  int64_t sh, sw, ph, pw;  // stride, padding
  int64_t groups, cg, og;  // per-group channels
};

Conv geometry(const Step& s) {
  Conv g{};
  g.nhwc = is_nhwc(s);
  const Dims4 x = dims4(s.input_shapes[0], g.nhwc);
  const Dims4 y = dims4(s.output_shape, g.nhwc);
  const ir::Shape& w = s.input_shapes[1];
  const auto stride = attr_pair(s, "stride", 1);
  const auto pad = attr_pair(s, "pad", 0);
  g.n = x.n, g.c = x.c, g.h = x.h, g.w = x.w;
  g.o = w[0], g.kh = w[2], g.kw = w[3];
  g.oh = y.h, g.ow = y.w;
  g.sh = stride[0], g.sw = stride[1], g.ph = pad[0], g.pw = pad[1];
  g.groups = s.attrs.get_int("groups", 1);
  g.cg = g.c / g.groups;
  g.og = g.o / g.groups;
  return g;
}

// Output pixels per im2col block: keeps the column buffer near 8 MiB.
int64_t pixel_block(const Conv& g, int64_t k) {
  constexpr int64_t kColFloats = int64_t{1} << 21;
  return std::clamp<int64_t>(kColFloats / std::max<int64_t>(k, 1), 64, g.oh * g.ow);
}

void conv_1x1(const KernelArgs& a, const Conv& g) {
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
      gemm(p, a.pool);
    } else {
      for (int64_t img = 0; img < g.n; ++img) {
        p.m = g.og, p.n = hw;
        p.a = w + grp * g.og * g.cg, p.lda = g.cg;
        p.b = x + (img * g.c + grp * g.cg) * hw, p.ldb = hw;
        p.c = a.out + (img * g.o + grp * g.og) * hw, p.ldc = hw;
        p.bias = bias ? bias + grp * g.og : nullptr;
        p.bias_per_row = true;
        gemm(p, a.pool);
      }
    }
  }
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
        const int64_t iy = oy * g.sh - g.ph + ki, ix = ox * g.sw - g.pw + kj;
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
        const int64_t iy = oy * g.sh - g.ph + ki;
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const int64_t ix = ox * g.sw - g.pw + kj;
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
        gemm(p, a.pool);
      }
    }
  }
}

}  // namespace

bool conv2d_is_1x1(const Step& s) {
  const Conv g = geometry(s);
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

void conv2d_auto(const KernelArgs& a) {
  const Conv g = geometry(a.step);
  if (conv2d_is_1x1(a.step)) {
    conv_1x1(a, g);
  } else {
    conv_im2col(a, g);
  }
}

void conv2d_im2col(const KernelArgs& a) {
  conv_im2col(a, geometry(a.step));
}

void conv2d_gemm_1x1(const KernelArgs& a) {
  conv_1x1(a, geometry(a.step));
}

}  // namespace cuvil::runtime::cpu
