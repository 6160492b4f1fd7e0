// conv2d.direct_nchw16c: direct convolution on blocked activations, x [N, Cb, H, W, 16] ->
// y [N, Ob, OH, OW, 16] (ir::Layout::nchw16c, groups 1). Weights are packed once (prepare hook)
// into groups of NV output blocks, [group][cb][kh][kw][16 input lanes][NV * 16], zero past O and
// past C. The register tile is MR output pixels of one row x NV blocks of 16 output channels
// (MR * NV <= 28 zmm accumulators): per input lane it loads NV weight vectors and broadcasts one
// input value per pixel. Input lanes past C are never read (they may hold anything); output
// lanes past O get 0 + 0 before the epilogue. Padding is materialised once per call in a
// zero-bordered copy of the input, so the inner loops have no bounds checks. Every output row of
// one block group is a task: a thread keeps its groups' weights in cache while it walks rows,
// and the epilogue runs on each finished row while it is hot.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <utility>

#include "base/error.h"
#include "runtime/cpu/aligned_array.h"
#include "runtime/cpu/conv_direct_nchw16c_tiles.h"
#include "runtime/cpu/conv_kernels.h"
#include "runtime/cpu/conv_schedule.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

using nchw16c::kLanes;
using nchw16c::kMaxAccumulators;
using nchw16c::kMaxMR;
using nchw16c::kMaxNV;
using nchw16c::tile_table;
using nchw16c::TileArgs;
using nchw16c::TileFn;
using nchw16c::TileTable;

struct BlockedShape {
  int64_t cb = 1;  // input channel blocks
  int64_t ob = 1;  // output channel blocks
  int nv = 1;      // output blocks per register tile (and per packed group)
  int64_t groups = 1;
  int mr = 1;  // output pixels per tile
};

BlockedShape blocked_shape(const ConvGeometry& g) {
  BlockedShape d;
  d.cb = ceil_div(g.c, kLanes);
  d.ob = ceil_div(g.o, kLanes);
  d.nv = static_cast<int>(std::min<int64_t>(d.ob, kMaxNV));
  d.groups = ceil_div(d.ob, d.nv);
  const int64_t mr_max = std::min<int64_t>(kMaxMR, kMaxAccumulators / d.nv);
  const int64_t tiles = ceil_div(g.ow, mr_max);
  d.mr = static_cast<int>(ceil_div(g.ow, tiles));  // even tiles: 56 -> 8 x 7, 28 -> 4 x 7
  return d;
}

// Floats of one packed group: [cb][kh][kw][16][nv * 16].
int64_t group_floats(const ConvGeometry& g, const BlockedShape& d) {
  return d.cb * g.kh * g.kw * kLanes * d.nv * kLanes;
}

// w[O, C, kh, kw] -> [group][cb][kh][kw][lane][nv * 16], zero past O and C.
void pack_weights(const ConvGeometry& g, const BlockedShape& d, const float* w, float* out) {
  const int64_t bw = int64_t{d.nv} * kLanes;
  for (int64_t grp = 0; grp < d.groups; ++grp) {
    for (int64_t cb = 0; cb < d.cb; ++cb) {
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          for (int64_t lane = 0; lane < kLanes; ++lane) {
            const int64_t c = cb * kLanes + lane;
            for (int64_t j = 0; j < bw; ++j) {
              const int64_t oc = grp * bw + j;
              *out++ = oc < g.o && c < g.c ? w[((oc * g.c + c) * g.kh + ki) * g.kw + kj] : 0.0f;
            }
          }
        }
      }
    }
  }
}

struct PackedWeights {
  AlignedArray<float> data;
};

// The portable tile (the reference of the AVX-512 one in conv_direct_nchw16c_avx512.cc), with
// the same data layout.
template <int MR, int NV>
void tile_portable(const TileArgs& t) {
  float acc[MR][NV * kLanes] = {};
  for (int64_t cb = 0; cb < t.cb; ++cb) {
    const int64_t lanes = cb == t.cb - 1 ? t.last_lanes : kLanes;
    for (int64_t ki = 0; ki < t.kh; ++ki) {
      for (int64_t kj = 0; kj < t.kw; ++kj) {
        const float* xc = t.x + cb * t.block_stride + ki * t.row_stride + kj * kLanes;
        const float* wp = t.w + ((cb * t.kh + ki) * t.kw + kj) * kLanes * t.bw;
        for (int64_t l = 0; l < lanes; ++l, wp += t.bw) {
          for (int p = 0; p < MR; ++p) {
            const float xv = xc[p * t.pix_stride + l];
            for (int j = 0; j < NV * kLanes; ++j) acc[p][j] += xv * wp[j];
          }
        }
      }
    }
  }
  for (int v = 0; v < NV; ++v) {
    float* y = t.y + v * t.y_block_stride;
    for (int p = 0; p < MR; ++p) {
      for (int l = 0; l < kLanes; ++l) {
        const bool has_bias = t.bias && v * kLanes + l < t.bias_valid;
        y[p * kLanes + l] = acc[p][v * kLanes + l] + (has_bias ? t.bias[v * kLanes + l] : 0.0f);
      }
    }
  }
}

struct Tiles {
  template <int MR, int NV>
  static constexpr TileFn fn() {
    return &tile_portable<MR, NV>;
  }
};

constexpr TileTable kPortableTiles = tile_table<Tiles>();

// The zero-bordered input [N][Cb][hp][wp][16]; x itself when no padding is needed.
const float* padded_input(const ConvGeometry& g, const BlockedShape& d, const float* x, int64_t hp,
                          int64_t wp, ThreadPool& pool) {
  if (g.ph == 0 && g.pw == 0) return x;
  float* buf =
      pool.scratch(0, ThreadPool::kKernel, static_cast<size_t>(g.n * d.cb * hp * wp * kLanes));
  const int64_t row = wp * kLanes;
  pool.parallel_for(g.n * d.cb * hp, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / hp, iy = r % hp - g.ph;
      float* dst = buf + r * row;
      if (iy < 0 || iy >= g.h) {
        std::memset(dst, 0, static_cast<size_t>(row) * sizeof(float));
        continue;
      }
      const int64_t left = std::min(g.pw, wp);
      const int64_t inner = std::clamp<int64_t>(wp - g.pw, 0, g.w);
      std::memset(dst, 0, static_cast<size_t>(left * kLanes) * sizeof(float));
      std::memcpy(dst + left * kLanes, x + (plane * g.h + iy) * g.w * kLanes,
                  static_cast<size_t>(inner * kLanes) * sizeof(float));
      const int64_t right = wp - left - inner;
      if (right > 0) {
        std::memset(dst + (left + inner) * kLanes, 0,
                    static_cast<size_t>(right * kLanes) * sizeof(float));
      }
    }
  });
  return buf;
}

}  // namespace

KernelIsa conv2d_direct_nchw16c_isa() {
  return kernel_isa_avx512_or_portable();
}

bool conv2d_direct_nchw16c_supports(const Step& s) {
  return is_nchw16c(s) && s.attrs.get_int("groups", 1) == 1 && has_unit_dilation(s);
}

std::shared_ptr<const void> conv2d_direct_nchw16c_prepare(const Step& s,
                                                          const float* const* constants) {
  if (!constants[1]) return nullptr;  // weights computed at run time: packed per call
  const ConvGeometry g = conv_geometry(s);
  const BlockedShape d = blocked_shape(g);
  auto packed = std::make_shared<PackedWeights>();
  packed->data = AlignedArray<float>(d.groups * group_floats(g, d));
  pack_weights(g, d, constants[1], packed->data.data());
  return packed;
}

void conv2d_direct_nchw16c(const KernelArgs& a) {
  const ConvGeometry& g = scheduled_geometry(a.step);
  CUVIL_CHECK(
      g.blocked && g.groups == 1,
      "conv2d.direct_nchw16c on a step that is not nchw16c with groups 1: " + a.step.node_name);
  const BlockedShape d = blocked_shape(g);
  const int64_t gfloats = group_floats(g, d);
  const float* packed = nullptr;
  if (a.step.prepared) {
    packed = static_cast<const PackedWeights*>(a.step.prepared.get())->data.data();
  } else {
    float* buf = a.pool.scratch(0, ThreadPool::kKernel2, static_cast<size_t>(d.groups * gfloats));
    pack_weights(g, d, a.in[1], buf);
    packed = buf;
  }
  const int64_t bw = int64_t{d.nv} * kLanes;
  const float* bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  const Epilogue epi(a.step, a.in, a.out);
  const TileTable& tiles =
      conv2d_direct_nchw16c_isa() == KernelIsa::avx512 ? nchw16c::tiles_avx512() : kPortableTiles;
  auto tile_fn = [&tiles](int mr, int nv) {
    return tiles[static_cast<size_t>((mr - 1) * kMaxNV + (nv - 1))];
  };

  const bool padded = g.ph != 0 || g.pw != 0;
  const int64_t hp = (g.oh - 1) * g.sh + g.kh, wp = (g.ow - 1) * g.sw + g.kw;
  const float* x = padded_input(g, d, a.in[0], hp, wp, a.pool);
  const int64_t row_stride = (padded ? wp : g.w) * kLanes;
  const int64_t block_stride = (padded ? hp : g.h) * row_stride;
  const int64_t out_plane = g.oh * g.ow * kLanes;
  const int64_t rows = g.n * g.oh;

  a.pool.parallel_for(d.groups * rows, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t grp = i / rows, r = i % rows;
      const int64_t img = r / g.oh, oy = r % g.oh;
      const int nv = static_cast<int>(std::min<int64_t>(d.nv, d.ob - grp * d.nv));
      TileArgs t{};
      t.block_stride = block_stride;
      t.row_stride = row_stride;
      t.pix_stride = g.sw * kLanes;
      t.cb = d.cb, t.kh = g.kh, t.kw = g.kw;
      t.last_lanes = g.c - (d.cb - 1) * kLanes;
      t.w = packed + grp * gfloats;
      t.bw = bw;
      t.y_block_stride = out_plane;
      t.bias = bias ? bias + grp * bw : nullptr;
      t.bias_valid = g.o - grp * bw;
      const float* xrow = x + img * d.cb * block_stride + oy * g.sh * row_stride;
      float* yrow = a.out + (img * d.ob + grp * d.nv) * out_plane + oy * g.ow * kLanes;
      for (int64_t ox = 0; ox < g.ow; ox += d.mr) {
        const int mr = static_cast<int>(std::min<int64_t>(d.mr, g.ow - ox));
        t.x = xrow + ox * g.sw * kLanes;
        t.y = yrow + ox * kLanes;
        tile_fn(mr, nv)(t);
      }
      if (!epi.empty()) {
        for (int v = 0; v < nv; ++v) epi.apply(yrow + v * out_plane, g.ow * kLanes);
      }
    }
  });
}

}  // namespace cuvil::runtime::cpu
