// The Winograd driver of conv2d.winograd_nhwc and conv2d.winograd_bf16 (input and output
// transforms, the a^2 GEMMs, threads), included by conv_winograd_nhwc.cc (portable) and
// conv_winograd_nhwc_avx512.cc (after its target pragma). The includer first defines, in
// cuvil::runtime::cpu::winograd's unnamed namespace, the vector of 16 channels `Vec` with vzero,
// vload, vstore, vadd, vsub, vfma and store_v, and gemm_fn(mr, nv); everything here is in that
// unnamed namespace too, so each file compiles its own copy for its own instruction set. Every
// header this one includes must already be included before the includer's target pragma.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/cpu/conv_winograd_bf16.h"
#include "runtime/cpu/conv_winograd_nhwc_shared.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu::winograd {

namespace {

// sum_k c[k] * in[k * stride]. The coefficient tables are constexpr and the loop unrolled, so
// zero terms vanish and +-1 become adds and subtracts at compile time.
template <int K>
inline Vec combine(const float (&c)[K], const Vec* in, int stride) {
  Vec r = vzero();
#pragma GCC unroll 8
  for (int k = 0; k < K; ++k) {
    if (c[k] == 0.0f) continue;
    if (c[k] == 1.0f) {
      r = vadd(r, in[k * stride]);
    } else if (c[k] == -1.0f) {
      r = vsub(r, in[k * stride]);
    } else {
      r = vfma(c[k], in[k * stride], r);
    }
  }
  return r;
}

// d: the a x a input tile (row-major) -> BT d B, element e stored at v + e * e_stride.
template <int M, class T>
inline void transform_input(const Vec* d, T* v, int64_t e_stride) {
  using W = Winograd<M>;
  constexpr int A = W::kAlpha;
  Vec t[A * A];
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) t[i * A + j] = combine(W::BT[i], d + j, A);
  }
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) {
      store_v(v + (i * A + j) * e_stride, combine(W::BT[j], t + i * A, 1));
    }
  }
}

// m: the a x a GEMM results of one tile (row-major) -> AT m A + bias, m x m outputs.
template <int M>
inline void transform_output(const Vec* m, Vec bias, Vec* y) {
  using W = Winograd<M>;
  constexpr int A = W::kAlpha;
  Vec t[M * A];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) t[i * A + j] = combine(W::AT[i], m + j, A);
  }
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < M; ++j) y[i * M + j] = vadd(combine(W::AT[j], t + i * A, 1), bias);
  }
}

// The convolution for one Winograd tile size, with V and U in T: float, or uint16_t for bf16.
template <int M, class T>
void run_winograd(const KernelArgs& a, const ConvGeometry& g, const WinogradShape& d,
                  const WinogradConvPlan& plan, const T* u) {
  using W = Winograd<M>;
  constexpr int A = W::kAlpha;
  constexpr int kE = A * A;
  const float* x = a.in[0];
  const float* bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  const Epilogue epi(a.step, a.in, a.out);
  const int64_t parts = plan.thread_parts;
  const uint16_t c_tail =
      static_cast<uint16_t>(g.c % kLanes == 0 ? 0xffffu : (1u << (g.c % kLanes)) - 1u);

  // Where tile t's outputs start: image, phase (py, px), first row and column on the phase's
  // grid (output row oy * dh + py, column ox * dw + px), and how many of its M x M outputs lie
  // inside the output.
  struct TileOrigin {
    int64_t img, py, px, oy, ox, rows, cols;
  };
  const bool dilated = g.dh * g.dw > 1;
  auto origin = [&](int64_t t) {
    const int64_t tr = t / d.tw, grid = tr / d.th;
    TileOrigin o{grid, 0, 0, (tr % d.th) * M, (t % d.tw) * M, 0, 0};
    int64_t grid_rows = g.oh, grid_cols = g.ow;
    if (dilated) {  // the divisions only where there are phases: this runs once per tile and block
      const int64_t phases = g.dh * g.dw;
      o.img = grid / phases;
      o.py = grid % phases / g.dw;
      o.px = grid % g.dw;
      grid_rows = (g.oh - o.py + g.dh - 1) / g.dh;  // this phase's
      grid_cols = (g.ow - o.px + g.dw - 1) / g.dw;
    }
    o.rows = std::clamp<int64_t>(grid_rows - o.oy, 0, M);
    o.cols = std::clamp<int64_t>(grid_cols - o.ox, 0, M);
    return o;
  };
  const int64_t out_pixel_stride = g.dw * g.o;  // floats between a tile row's outputs
  // Output pixel (i, j) of a tile.
  auto out_at = [&](const TileOrigin& o, int64_t i, int64_t j) {
    return a.out +
           ((o.img * g.oh + (o.oy + i) * g.dh + o.py) * g.ow + (o.ox + j) * g.dw + o.px) * g.o;
  };

  // Tiles [t0, t1) into V[e][tile - t0][cp].
  auto transform_tiles = [&](int64_t t0, int64_t t1, T* v) {
    const int64_t e_stride = (t1 - t0) * d.cp;
    Vec tile[kE];
    for (int64_t t = t0; t < t1; ++t) {
      const TileOrigin o = origin(t);
      // Tile input (i, j) is input pixel ((oy + i) * dh + py - ph, (ox + j) * dw + px - pw).
      const int64_t iy0 = o.oy * g.dh + o.py - g.ph, ix0 = o.ox * g.dw + o.px - g.pw;
      for (int64_t c0 = 0; c0 < g.c; c0 += kLanes) {
        const uint16_t mask = c0 + kLanes <= g.c ? uint16_t{0xffff} : c_tail;
        for (int i = 0; i < A; ++i) {
          const int64_t iy = iy0 + i * g.dh;
          const bool row_in = iy >= 0 && iy < g.h;
          const float* xrow = row_in ? x + ((o.img * g.h + iy) * g.w) * g.c + c0 : nullptr;
          for (int j = 0; j < A; ++j) {
            const int64_t ix = ix0 + j * g.dw;
            tile[i * A + j] =
                row_in && ix >= 0 && ix < g.w ? vload(xrow + ix * g.c, mask) : vzero();
          }
        }
        transform_input<M>(tile, v + (t - t0) * d.cp + c0, e_stride);
      }
    }
  };

  // Output-channel block gb of tiles [t0, t1): per element e one GEMM of the tiles' V[e] by
  // U[e] (U[e]'s slice stays in L1 across the tiles' register groups) into mbuf[e][tile][bw],
  // then each tile's outputs from its a^2 products.
  auto multiply_and_store = [&](int64_t t0, int64_t t1, int64_t gb, const T* v, float* mbuf) {
    const int64_t tiles = t1 - t0;
    const int64_t k0 = gb * d.bw;
    const int64_t width = std::min(d.bw, g.o - k0);
    const int nv = static_cast<int>((width + kLanes - 1) / kLanes);
    const int64_t rem = width - int64_t{nv - 1} * kLanes;
    const uint16_t k_tail = static_cast<uint16_t>(rem >= kLanes ? 0xffffu : (1u << rem) - 1u);
    const int64_t groups = (tiles + d.mr - 1) / d.mr;  // even groups: 49 tiles -> 6 x 4 + 5 x 5
    const int64_t m_e_stride = tiles * d.bw;
    for (int e = 0; e < kE; ++e) {
      for (int64_t grp = 0; grp < groups; ++grp) {
        const int64_t p0 = grp * tiles / groups, p1 = (grp + 1) * tiles / groups;
        const int mr = static_cast<int>(p1 - p0);
        const T* ve = v + (e * tiles + p0) * d.cp;
        float* me = mbuf + e * m_e_stride + p0 * d.bw;
        if constexpr (std::is_same_v<T, float>) {
          gemm_fn(mr, nv)(ve, d.cp, g.c, u + ((e * d.blocks + gb) * g.c) * d.bw, d.bw, me);
        } else {
          const int64_t pairs = channel_pairs(g);
          winograd_bf16_gemm(mr, nv)(ve, d.cp, pairs, u + ((e * d.blocks + gb) * pairs) * d.bw * 2,
                                     d.bw, me);
        }
      }
    }
    for (int64_t p = 0; p < tiles; ++p) {
      const TileOrigin o = origin(t0 + p);
      for (int j = 0; j < nv; ++j) {
        const uint16_t mask = j == nv - 1 ? k_tail : uint16_t{0xffff};
        Vec mv[kE];
        for (int e = 0; e < kE; ++e) {
          mv[e] = vload(mbuf + e * m_e_stride + p * d.bw + j * kLanes, 0xffff);
        }
        const Vec b = bias ? vload(bias + k0 + j * kLanes, mask) : vzero();
        Vec y[M * M];
        transform_output<M>(mv, b, y);
        for (int64_t i = 0; i < o.rows; ++i) {
          float* orow = out_at(o, i, 0) + k0 + j * kLanes;
          for (int64_t jj = 0; jj < o.cols; ++jj) {
            vstore(orow + jj * out_pixel_stride, mask, y[i * M + jj]);
          }
        }
      }
    }
  };

  // The fused epilogue on output channels [k0, k1) of tiles [t0, t1), while they are in cache.
  auto finish = [&](int64_t t0, int64_t t1, int64_t k0, int64_t k1) {
    for (int64_t t = t0; t < t1; ++t) {
      const TileOrigin o = origin(t);
      for (int64_t i = 0; i < o.rows; ++i) {
        float* row = out_at(o, i, 0);
        if (k0 == 0 && k1 == g.o && g.dw == 1) {  // the row's outputs are contiguous
          epi.apply(row, o.cols * g.o);
          continue;
        }
        for (int64_t jj = 0; jj < o.cols; ++jj)
          epi.apply(row + jj * out_pixel_stride + k0, k1 - k0);
      }
    }
  };

  a.pool.parallel_for_balanced(parts * d.tiles, [&](int tid, int64_t i0, int64_t i1) {
    T* v = reinterpret_cast<T*>(a.pool.scratch(tid, ThreadPool::kKernel,
                                               static_cast<size_t>(kE * d.tiles_per_block * d.cp)));
    float* mbuf = a.pool.scratch(tid, ThreadPool::kKernel2,
                                 static_cast<size_t>(kE * d.tiles_per_block * d.bw));
    for (int64_t part = i0 / d.tiles; part * d.tiles < i1; ++part) {
      const int64_t p0 = std::max(i0, part * d.tiles) - part * d.tiles;
      const int64_t p1 = std::min(i1, (part + 1) * d.tiles) - part * d.tiles;
      const int64_t gb0 = part * d.blocks / parts, gb1 = (part + 1) * d.blocks / parts;
      for (int64_t t0 = p0; t0 < p1; t0 += d.tiles_per_block) {
        const int64_t t1 = std::min(p1, t0 + d.tiles_per_block);
        transform_tiles(t0, t1, v);
        for (int64_t gb = gb0; gb < gb1; ++gb) multiply_and_store(t0, t1, gb, v, mbuf);
        if (!epi.empty()) finish(t0, t1, gb0 * d.bw, std::min(g.o, gb1 * d.bw));
      }
    }
  });
}

template <class T>
void run_with(const KernelArgs& a, const ConvGeometry& g, const WinogradShape& d,
              const WinogradConvPlan& plan, const T* u) {
  if (d.m == 2) {
    run_winograd<2>(a, g, d, plan, u);
  } else {
    run_winograd<4>(a, g, d, plan, u);
  }
}

}  // namespace

}  // namespace cuvil::runtime::cpu::winograd
