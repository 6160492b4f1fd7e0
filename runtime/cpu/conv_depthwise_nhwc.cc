// conv2d.depthwise_nhwc: depthwise convolution (groups == input channels, each input channel
// feeding `mult` = O / C output channels) on NHWC activations. The weights w[O, 1, KH, KW] are
// repacked once (prepare hook) channel-innermost, [KH][KW][O rounded up to 16], zero padded, so
// one tap's weights for 16 channels are one vector. A register tile of MR output pixels x NV
// vectors of 16 channels loads a tap's NV weight vectors once and multiplies them into the MR
// pixels' input vectors (memory operands of the FMA); the last vector of the channels is masked.
// Dilation only spreads the taps: the tiles step dh input rows and dw pixels between them.
// Padding is never materialised: an output row restricts the kernel rows to those inside the
// input, interior pixels (every kernel column inside the input) run in tiles of up to
// kTilePixels pixels, and border pixels run one by one with their own column range. Threads
// split output rows (batch x OH), and channel groups too when there are few rows; each walks its
// rows in chunks of about 128 KiB of output, one channel group (NV vectors) at a time through the
// whole chunk. Bias initialises the accumulators; an epilogue with a lane form is applied to them
// before the store, another runs on each finished chunk while
// it is in cache.
//
// The AVX-512 or AVX2 tile (conv_depthwise_nhwc_avx512.cc, conv_depthwise_nhwc_avx2.cc) runs
// as conv2d_depthwise_nhwc_isa() says (kernel_isa(), runtime/cpu/cpu_isa.h: the GEMM's
// instruction set, so CUVIL_CPU_DISABLE=avx512 selects AVX2 and CUVIL_ISA=ref the portable path)
// when the multiplier is 1; a multiplier > 1 (each output channel reads input channel oc / mult)
// runs the portable tile.
//
// It also runs grouped convolutions of G = 2, 4 or 8 channels per group in and out
// (is_narrow_group_conv: ResNeXt's and RegNet's 3x3s), where a vector of 16 channels holds
// 16 / G whole groups of input and output alike. The weights are packed [KH][KW][G][Op]: per
// tap, G vectors, vector r holding at input lane (q, i) the weight from input i of group q to its
// output (i + r) mod G. A tile multiplies each input vector by the G of them into G accumulators
// (no shuffles in the window loop) and, after the window, sums accumulator r rotated by r lanes
// within each group into the output. One vector per tile, up to max_grouped_mr(G) pixels; the
// AVX2 tile runs the vector's two halves one after the other.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "base/error.h"
#include "runtime/cpu/aligned_array.h"
#include "runtime/cpu/conv_depthwise_nhwc_tiles.h"
#include "runtime/cpu/conv_kernels.h"
#include "runtime/cpu/conv_schedule.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/register_tile.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

// A tile: up to kTilePixels = 6 interior pixels x up to 4 vectors of 16 channels (24
// accumulators, 4 weight vectors; the inputs are FMA memory operands). On MobileNetV2's shapes
// (cuvil-micro-conv, one thread, a loaded 2-core machine) more channels per tile beat more
// pixels: 6 x 4 against 14 x 1 took 0.6-0.9x the time, 12 x 2 and 4 x 4 fell in between.
// Output rows per thread below which threads split channel groups as well.
constexpr int64_t kRowsPerThread = 8;
// Output floats per work item (128 KiB): each channel group walks the item's rows, so its
// weights and the input rows it rereads stay in L1/L2, and the epilogue finds the rows in L2.
constexpr int64_t kChunkFloats = int64_t{1} << 15;

int64_t padded_channels(const ConvGeometry& g) {
  return round_up(g.o, kLanes);
}

// Channels per group, in and out, of a narrow grouped convolution; 1 for a depthwise one.
int64_t group_width(const ConvGeometry& g) {
  return g.groups > 1 && g.cg > 1 ? g.cg : 1;
}

int64_t packed_floats(const ConvGeometry& g) {
  return g.kh * g.kw * group_width(g) * padded_channels(g);
}

// w[O, G, KH, KW] -> [KH][KW][G][Op], Op = O rounded up to 16, zeros past O: rotation r of tap k
// holds at channel c = q * G + i (group q, input i) the weight from input i to output
// q * G + (i + r) mod G. Depthwise (G = 1): [KH][KW][Op].
void pack_weights(const ConvGeometry& g, const float* w, float* out) {
  const int64_t op = padded_channels(g), khw = g.kh * g.kw, width = group_width(g);
  for (int64_t k = 0; k < khw; ++k) {
    for (int64_t r = 0; r < width; ++r) {
      float* dst = out + (k * width + r) * op;
      for (int64_t c = 0; c < g.o; ++c) {
        const int64_t q = c / width, i = c % width, oc = q * width + (i + r) % width;
        dst[c] = w[(oc * width + i) * khw + k];
      }
      std::fill(dst + g.o, dst + op, 0.0f);
    }
  }
}

// The packed weights (64-byte aligned: a tap's vectors then never span two cache lines).
struct PackedWeights {
  AlignedArray<float> weights;
};

using depthwise::kTilePixels;
using depthwise::tile_table;
using depthwise::TileArgs;
using depthwise::TileFn;
using depthwise::TileTable;

// The portable tile with the same data layout (the reference of the AVX-512 one, the fallback
// without AVX-512, and every multiplier):
// output lane l reads input channel (oc0 + l) / mult, relative to the tile's first one.
template <int MR, int NV>
void tile_portable(const TileArgs& t) {
  constexpr int kWidth = NV * kLanes;
  const int lanes = (NV - 1) * kLanes + __builtin_popcount(t.tail_mask);
  int64_t src[kWidth];
  for (int l = 0; l < lanes; ++l) src[l] = (t.oc0 + l) / t.mult - t.oc0 / t.mult;
  float acc[MR][kWidth];
  for (int p = 0; p < MR; ++p) {
    for (int l = 0; l < lanes; ++l) acc[p][l] = t.bias ? t.bias[l] : 0.0f;
  }
  for (int64_t ki = 0; ki < t.nki; ++ki) {
    for (int64_t kj = 0; kj < t.nkj; ++kj) {
      const float* xk = t.x + ki * t.row_stride + kj * t.tap_stride;
      const float* wk = t.w + ki * t.w_row_stride + kj * t.w_tap_stride;
      for (int p = 0; p < MR; ++p) {
        const float* xp = xk + p * t.pix_stride;
        if (t.mult == 1) {
          for (int l = 0; l < lanes; ++l) acc[p][l] += xp[l] * wk[l];
        } else {
          for (int l = 0; l < lanes; ++l) acc[p][l] += xp[src[l]] * wk[l];
        }
      }
    }
  }
  for (int p = 0; p < MR; ++p) {
    float* y = t.y + p * t.y_pix_stride;
    std::memcpy(y, acc[p], static_cast<size_t>(lanes) * sizeof(float));
    if (t.epilogue) apply_lanes(*t.epilogue, y, t.oc0, lanes);
  }
}

struct Tiles {
  template <int MR, int NV>
  static constexpr TileFn fn() {
    return &tile_portable<MR, NV>;
  }
};

constexpr TileTable kPortableTiles = tile_table<Tiles>();

// The portable grouped tile (the reference of the AVX-512 one): one vector of 16 channels, G
// accumulators per lane, summed across rotations at the end as the vector tile does.
template <int MR, int G>
void grouped_tile_portable(const TileArgs& t) {
  const int lanes = __builtin_popcount(t.tail_mask);
  float acc[MR][G][kLanes] = {};
  for (int64_t ki = 0; ki < t.nki; ++ki) {
    for (int64_t kj = 0; kj < t.nkj; ++kj) {
      const float* xk = t.x + ki * t.row_stride + kj * t.tap_stride;
      const float* wk = t.w + ki * t.w_row_stride + kj * t.w_tap_stride;
      for (int p = 0; p < MR; ++p) {
        const float* xp = xk + p * t.pix_stride;
        for (int r = 0; r < G; ++r) {
          for (int l = 0; l < lanes; ++l) acc[p][r][l] += xp[l] * wk[r * t.w_rot_stride + l];
        }
      }
    }
  }
  for (int p = 0; p < MR; ++p) {
    float* y = t.y + p * t.y_pix_stride;
    for (int l = 0; l < lanes; ++l) {
      float sum = t.bias ? t.bias[l] : 0.0f;
      for (int r = 0; r < G; ++r) sum += acc[p][r][depthwise::rotated_lane(l, r, G)];
      y[l] = sum;
    }
    if (t.epilogue) apply_lanes(*t.epilogue, y, t.oc0, lanes);
  }
}

struct PortableGroupedTiles {
  template <int MR, int G>
  static constexpr TileFn fn() {
    return &grouped_tile_portable<MR, G>;
  }
};

TileFn grouped_tile_fn(KernelIsa isa, bool tail, int64_t width, int mr) {
  const size_t i = static_cast<size_t>(mr - 1);
  const int w = static_cast<int>(width);
  if (isa == KernelIsa::avx512) return depthwise::grouped_tiles_avx512(w, tail)[i];
  if (isa == KernelIsa::avx2) return depthwise::grouped_tiles_avx2(w, tail)[i];
  return depthwise::grouped_tile_table<PortableGroupedTiles>(w)[i];
}

}  // namespace

KernelIsa conv2d_depthwise_nhwc_isa() {
  return kernel_isa();
}

namespace {

TileFn tile_fn(KernelIsa isa, bool tail, int mr, int nv) {
  const size_t i = register_tile_index(mr, nv);
  switch (isa) {
    case KernelIsa::avx512:
      return tail ? depthwise::tail_tiles_avx512()[i] : depthwise::tiles_avx512()[i];
    case KernelIsa::avx2:
      return tail ? depthwise::tail_tiles_avx2()[i] : depthwise::tiles_avx2()[i];
    case KernelIsa::portable:
      break;
  }
  return kPortableTiles[i];
}

// How a call walks its output: interior pixel range, tile shape and thread split.
struct DepthwiseShape {
  int64_t ox_lo = 0, ox_hi = 0;  // output columns whose window has every kernel column inside
  int mr = 1;                    // pixels per interior tile (border pixels: one per tile)
  int nv = 1;                    // channel vectors per tile
  int64_t blocks = 1;            // channel vectors of the output (ceil(O / 16))
  int64_t groups = 1;            // tiles' channel groups: ceil(blocks / nv)
  int64_t parts = 1;             // channel parts threads split (1: rows only)
  int64_t chunk_rows = 1;        // output rows per work item
};

DepthwiseShape depthwise_shape(const ConvGeometry& g, int threads) {
  DepthwiseShape d;
  const int64_t width = group_width(g);
  const int max_mr = width > 1 ? depthwise::max_grouped_mr(static_cast<int>(width)) : kTilePixels;
  d.ox_lo = std::min(g.ow, ceil_div(g.pw, g.sw));
  const int64_t span = (g.kw - 1) * g.dw + 1;  // input columns a window covers
  const int64_t last = g.w - span + g.pw;      // the last interior column's window start, times sw
  d.ox_hi = std::clamp<int64_t>(last < 0 ? 0 : last / g.sw + 1, d.ox_lo, g.ow);
  const int64_t interior = d.ox_hi - d.ox_lo;
  if (interior > 0) {
    const int64_t tiles = ceil_div(interior, max_mr);
    d.mr = static_cast<int>(ceil_div(interior, tiles));  // even tiles: 26 -> 4 x 6 + 2, 5 -> 5
  }
  d.blocks = ceil_div(g.o, kLanes);
  d.nv = static_cast<int>(std::min<int64_t>(width > 1 ? 1 : kMaxNV, d.blocks));
  d.groups = ceil_div(d.blocks, d.nv);
  const int64_t rows = g.n * g.oh;
  if (rows < kRowsPerThread * threads) {
    d.parts = std::clamp<int64_t>(ceil_div(kRowsPerThread * threads, rows), 1, d.groups);
  }
  d.chunk_rows = std::clamp<int64_t>(kChunkFloats / (g.ow * g.o), 1, rows);
  return d;
}

}  // namespace

bool conv2d_depthwise_supports(const Step& s) {
  if (!is_nhwc(s) || s.input_shapes.size() < 2 || s.input_shapes[1].size() != 4) return false;
  const int64_t groups = s.attrs.get_int("groups", 1);
  return is_depthwise_conv(groups, s.input_shapes[1]) ||
         is_narrow_group_conv(groups, s.input_shapes[1]);
}

std::shared_ptr<const void> conv2d_depthwise_prepare(const Step& s, const float* const* constants) {
  if (!constants[1] || !conv2d_depthwise_supports(s)) return nullptr;  // packed per call
  const ConvGeometry g = conv_geometry(s);
  auto packed = std::make_shared<PackedWeights>();
  packed->weights = AlignedArray<float>(packed_floats(g));
  pack_weights(g, constants[1], packed->weights.data());
  return packed;
}

void conv2d_depthwise_nhwc(const KernelArgs& a) {
  const ConvGeometry& g = scheduled_geometry(a.step);
  const ir::Shape& wshape = a.step.input_shapes[1];
  CUVIL_CHECK(
      g.nhwc && (is_depthwise_conv(g.groups, wshape) || is_narrow_group_conv(g.groups, wshape)),
      "conv2d.depthwise_nhwc on a step that is not an NHWC depthwise or narrow grouped "
      "convolution: " +
          a.step.node_name);
  const int64_t width = group_width(g);
  const int64_t op = padded_channels(g);
  const float* packed = nullptr;
  if (a.step.prepared) {
    packed = static_cast<const PackedWeights*>(a.step.prepared.get())->weights.data();
  } else {
    float* buf = a.pool.scratch(0, ThreadPool::kKernel2, static_cast<size_t>(packed_floats(g)));
    pack_weights(g, a.in[1], buf);
    packed = buf;
  }
  const float* x = a.in[0];
  const float* bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  const Epilogue epi(a.step, a.in, a.out);
  // The tiles apply the epilogue in registers where it has that form; else it runs on the rows.
  const LaneEpilogue* lanes = epi.empty() ? nullptr : epi.lanes();
  const int64_t mult = width > 1 ? 1 : g.og;
  // The vector tiles take multiplier 1 only.
  const KernelIsa isa = mult == 1 ? conv2d_depthwise_nhwc_isa() : KernelIsa::portable;
  const DepthwiseShape d = depthwise_shape(g, a.pool.threads());
  const int64_t rest = g.o % kLanes;
  const uint16_t last_mask = static_cast<uint16_t>(rest == 0 ? 0xffffu : (1u << rest) - 1u);
  const int64_t rows = g.n * g.oh;

  // Output rows [r0, r1), channel groups of part `part`: each group walks all the rows, so its
  // weights and input columns stay in L1; then the epilogue runs on the rows.
  auto run_chunk = [&](int64_t r0, int64_t r1, int64_t part) {
    const int64_t gr0 = part * d.groups / d.parts, gr1 = (part + 1) * d.groups / d.parts;
    TileArgs t{};
    t.pix_stride = g.sw * g.c;
    t.row_stride = g.dh * g.w * g.c;
    t.tap_stride = g.dw * g.c;
    t.w_row_stride = g.kw * width * op;
    t.w_tap_stride = width * op;
    t.w_rot_stride = op;
    t.y_pix_stride = g.o;
    t.mult = mult;
    t.epilogue = lanes;
    for (int64_t gr = gr0; gr < gr1; ++gr) {
      const int64_t b0 = gr * d.nv;
      const int nv = static_cast<int>(std::min<int64_t>(d.nv, d.blocks - b0));
      const bool tail = b0 + nv == d.blocks && rest != 0;
      const int64_t oc0 = b0 * kLanes, ic0 = oc0 / mult;
      t.tail_mask = tail ? last_mask : 0xffff;
      t.bias = bias ? bias + oc0 : nullptr;
      t.oc0 = oc0;
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t img = r / g.oh, oy = r % g.oh;
        const int64_t iy0 = oy * g.sh - g.ph;
        const int64_t ki0 = first_tap_inside(iy0, g.dh, g.kh);
        const int64_t nki = std::max<int64_t>(0, end_tap_inside(iy0, g.h, g.dh, g.kh) - ki0);
        const float* xrow = nki > 0 ? x + (img * g.h + iy0 + ki0 * g.dh) * g.w * g.c + ic0 : x;
        float* yrow = a.out + r * g.ow * g.o + oc0;
        t.nki = nki;
        // Pixels [ox, ox + mr) with kernel columns [kj0, kj0 + nkj) inside the input.
        auto run = [&](int64_t ox, int mr, int64_t kj0, int64_t nkj) {
          t.nkj = nkj;
          t.x = nki > 0 && nkj > 0 ? xrow + (ox * g.sw - g.pw + kj0 * g.dw) * g.c : x;
          t.w = packed + (ki0 * g.kw + kj0) * width * op + oc0;
          t.y = yrow + ox * g.o;
          if (width > 1) {
            grouped_tile_fn(isa, tail, width, mr)(t);
          } else {
            tile_fn(isa, tail, mr, nv)(t);
          }
        };
        auto border = [&](int64_t ox) {
          const int64_t ix0 = ox * g.sw - g.pw;
          const int64_t kj0 = first_tap_inside(ix0, g.dw, g.kw);
          run(ox, 1, kj0, std::max<int64_t>(0, end_tap_inside(ix0, g.w, g.dw, g.kw) - kj0));
        };
        for (int64_t ox = 0; ox < d.ox_lo; ++ox) border(ox);
        for (int64_t ox = d.ox_lo; ox < d.ox_hi; ox += d.mr) {
          run(ox, static_cast<int>(std::min<int64_t>(d.mr, d.ox_hi - ox)), 0, g.kw);
        }
        for (int64_t ox = d.ox_hi; ox < g.ow; ++ox) border(ox);
      }
    }
    if (epi.empty() || lanes) return;
    if (d.parts == 1) {
      epi.apply(a.out + r0 * g.ow * g.o, (r1 - r0) * g.ow * g.o);
      return;
    }
    const int64_t c0 = gr0 * d.nv * kLanes, c1 = std::min(g.o, gr1 * d.nv * kLanes);
    for (int64_t pix = r0 * g.ow; pix < r1 * g.ow; ++pix)
      epi.apply(a.out + pix * g.o + c0, c1 - c0);
  };

  // Threads take equal shares of (channel part, output row); each walks its rows in chunks.
  a.pool.parallel_for(d.parts * rows, [&](int64_t i0, int64_t i1) {
    for (int64_t part = i0 / rows; part * rows < i1; ++part) {
      const int64_t r0 = std::max(i0, part * rows) - part * rows;
      const int64_t r1 = std::min(i1, (part + 1) * rows) - part * rows;
      for (int64_t r = r0; r < r1; r += d.chunk_rows) {
        run_chunk(r, std::min(r1, r + d.chunk_rows), part);
      }
    }
  });
}

}  // namespace cuvil::runtime::cpu
