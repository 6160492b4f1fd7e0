// conv2d.direct_nhwc: direct convolution on NHWC activations, no im2col buffer. The weights are
// packed once (prepare hook) into blocks of 16 * conv.vectors output channels, walked in the
// order a tile reads them ([channel block of 16][kh][kw][16][block width]), zero padded past the
// group's channels. A register tile of MR output pixels x NV vectors of 16 output channels
// (MR * NV accumulators + NV weight vectors + 1 broadcast <= 32 zmm registers) walks the window
// 16 input channels at a time: per channel it loads NV weight vectors and broadcasts one input
// value per pixel. Tiles cover one output row, or run across rows for 1x1 stride-1 convolutions
// (contiguous pixels). Padding is materialised once per call in a zero-bordered copy of the
// input, so the inner loops have no bounds checks; a dilated window steps its taps dh rows and dw
// pixels apart in it, and a tile skips the taps that read only padding for all its pixels (see
// run_live_taps). Threads split output rows or output channel blocks (conv.partition);
// conv.channels_per_pass < C sums the input channels in passes whose weights stay in L1. Bias is
// added in registers, and so is the epilogue where it has a lane form (Epilogue::lanes(): a
// residual add, ReLU, ...); another runs on each finished chunk of rows while it is in cache.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "base/error.h"
#include "runtime/cpu/aligned_array.h"
#include "runtime/cpu/attrs.h"
#include "runtime/cpu/conv_direct_nhwc_tiles.h"
#include "runtime/cpu/conv_kernels.h"
#include "runtime/cpu/conv_schedule.h"
#include "runtime/cpu/conv_schedule_attrs.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/register_tile.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

// conv.vectors = auto: 4 vectors x 6 pixels where tiles fill well (1x1 stride-1 convolutions,
// whose tiles run across rows, and rows of at least kWideRow pixels), else 2 vectors x up to 14
// pixels (a 7- or 14-pixel row in one tile). Measured with cuvil-micro-conv on ResNet-50's shapes.
constexpr int kWideRow = 28;

// The schedule of one direct convolution, from the conv-tiling pass's step attributes.
struct DirectSchedule {
  int vectors = kAutoVectors;  // conv.vectors: output-channel vectors per tile, 0 = auto
  ConvSplit partition = ConvSplit::automatic;  // conv.partition: auto | rows | channels
  int64_t channels_per_pass = 0;  // conv.channels_per_pass: >= C (or 0) = all in one pass
  bool prefetch_weights = true;   // conv.prefetch_weights: next block's weights into L2
};

DirectSchedule direct_schedule(const Step& s) {
  DirectSchedule sc;
  const std::string where = conv_attr_where(s, "conv2d.direct_nhwc");
  sc.vectors = conv_vectors_attr(s, where);
  sc.partition = conv_partition_attr(s, where);
  sc.channels_per_pass = s.attrs.get_int(attrs::kConvChannelsPerPass, 0);
  if (sc.channels_per_pass < 0) {
    throw UserError("conv.channels_per_pass: expected >= 0, got " +
                    std::to_string(sc.channels_per_pass) + where);
  }
  sc.prefetch_weights = s.attrs.get_int(attrs::kConvPrefetchWeights, 1) != 0;
  return sc;
}

// 1x1 without padding: a tile's output pixels read contiguous input pixels, across output rows
// too (a strided input is first gathered into contiguous pixels, a quarter of its size at stride
// 2: the downsampling convolutions then run the tiles of the unit-stride ones).
bool runs_flat(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.ph == 0 && g.pw == 0;
}

struct DirectShape {
  int nv = 1;                    // vectors per output-channel block
  int64_t bw = kLanes;           // block width in channels (nv * 16)
  int64_t blocks_per_group = 1;  // ceil(og / bw)
  int mr = 1;                    // output pixels per tile within one row
  int flat_mr = 1;               // output pixels per tile when tiles span rows (1x1 convs)
};

DirectShape direct_shape(const ConvGeometry& g, const DirectSchedule& sc) {
  DirectShape d;
  const int vectors = sc.vectors != kAutoVectors         ? sc.vectors
                      : runs_flat(g) || g.ow >= kWideRow ? 4
                                                         : 2;
  d.nv = static_cast<int>(std::clamp<int64_t>((g.og + kLanes - 1) / kLanes, 1, vectors));
  d.bw = int64_t{d.nv} * kLanes;
  d.blocks_per_group = (g.og + d.bw - 1) / d.bw;
  d.flat_mr = max_mr(d.nv);
  const int64_t tiles = (g.ow + d.flat_mr - 1) / d.flat_mr;
  d.mr = static_cast<int>((g.ow + tiles - 1) / tiles);  // even tiles: 56 -> 4 x 14, 7 -> 1 x 7
  return d;
}

// Input channels summed per pass over a chunk of output rows (whole packed channel blocks of 16):
// fewer than all keep that pass's weights in L1 while every pixel tile of the rows uses them, at
// the cost of partial sums going through the output.
int64_t channels_per_pass(const ConvGeometry& g, const DirectSchedule& sc) {
  if (sc.channels_per_pass == 0 || sc.channels_per_pass >= g.cg) return g.cg;
  return std::max<int64_t>(kLanes, sc.channels_per_pass - sc.channels_per_pass % kLanes);
}

int64_t packed_floats(const ConvGeometry& g, const DirectShape& d) {
  return g.groups * d.blocks_per_group * g.kh * g.kw * g.cg * d.bw;
}

// w[O, cg, kh, kw] -> [group][block][channel block of 16][kh][kw][16][bw] (the last channel
// block holds the cg % 16 rest): a tile walks its weights in this order, so they stream.
void pack_weights(const ConvGeometry& g, const DirectShape& d, const float* w, float* out) {
  const int64_t khw = g.kh * g.kw;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    for (int64_t b = 0; b < d.blocks_per_group; ++b) {
      for (int64_t c0 = 0; c0 < g.cg; c0 += kLanes) {
        const int64_t c1 = std::min<int64_t>(g.cg, c0 + kLanes);
        for (int64_t k = 0; k < khw; ++k) {
          for (int64_t c = c0; c < c1; ++c) {
            for (int64_t lane = 0; lane < d.bw; ++lane) {
              const int64_t oc = b * d.bw + lane;
              *out++ = oc < g.og ? w[((grp * g.og + oc) * g.cg + c) * khw + k] : 0.0f;
            }
          }
        }
      }
    }
  }
}

// Made once at lowering (prepare): the weights packed for the step's schedule.
struct PackedWeights {
  AlignedArray<float> data;
};

using TileArgs = DirectTileArgs;
using TileFn = DirectTileFn;

// The portable tile (the reference of the AVX-512 and AVX2 ones in conv_direct_nhwc_avx512.cc and
// conv_direct_nhwc_avx2.cc), with the same data layout.
template <int MR, int NV>
void tile(const TileArgs& t) {
  float acc[MR][NV * kLanes] = {};
  const float* wp = t.w;
  for (int64_t c0 = 0; c0 < t.cg; c0 += kLanes) {
    const int64_t cn = std::min<int64_t>(kLanes, t.cg - c0);
    for (int64_t ki = 0; ki < t.kh; ++ki) {
      for (int64_t kj = 0; kj < t.kw; ++kj) {
        const float* xc = t.x + ki * t.row_stride + kj * t.tap_stride + c0;
        for (int64_t c = 0; c < cn; ++c, wp += t.bw) {
          for (int p = 0; p < MR; ++p) {
            const float xv = xc[p * t.pix_stride + c];
            for (int l = 0; l < NV * kLanes; ++l) acc[p][l] += xv * wp[l];
          }
        }
      }
    }
  }
  for (int v = 0; v < NV; ++v) {
    const unsigned m = v == NV - 1 ? t.tail_mask : 0xffffu;
    for (int l = 0; l < kLanes; ++l) {
      if (!(m >> l & 1u)) continue;
      const float b = t.bias && t.finish ? t.bias[v * kLanes + l] : 0.0f;
      for (int p = 0; p < MR; ++p) {
        float* y = t.y + p * t.y_pix_stride + v * kLanes + l;
        *y = (t.accumulate ? *y : 0.0f) + acc[p][v * kLanes + l] + b;
      }
    }
  }
  if (!t.finish || !t.epilogue) return;
  const int64_t width = (NV - 1) * kLanes + __builtin_popcount(t.tail_mask);
  for (int p = 0; p < MR; ++p) apply_lanes(*t.epilogue, t.y + p * t.y_pix_stride, t.col, width);
}
struct Tiles {
  template <int MR, int NV>
  static constexpr TileFn fn() {
    return &tile<MR, NV>;
  }
};

constexpr DirectTileTable kPortableTiles = register_tile_table<TileFn, Tiles>();

}  // namespace

KernelIsa conv2d_direct_nhwc_isa() {
  return kernel_isa();
}

namespace {

const DirectTileTable& tiles() {
  return set_for_isa(conv2d_direct_nhwc_isa(), direct_nhwc_tiles_avx512(), direct_nhwc_tiles_avx2(),
                     kPortableTiles);
}

// The zero-bordered input: rows 0 .. hp, columns 0 .. wp cover every window; returns x itself
// when no padding is needed.
const float* padded_input(const ConvGeometry& g, const float* x, int64_t hp, int64_t wp,
                          ThreadPool& pool) {
  if (g.ph == 0 && g.pw == 0) return x;
  float* buf = pool.scratch(0, ThreadPool::kKernel, static_cast<size_t>(g.n * hp * wp * g.c));
  pool.parallel_for(g.n * hp, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t img = r / hp, iy = r % hp - g.ph;
      float* dst = buf + r * wp * g.c;
      if (iy < 0 || iy >= g.h) {
        std::memset(dst, 0, static_cast<size_t>(wp * g.c) * sizeof(float));
        continue;
      }
      const int64_t left = std::min(g.pw, wp);
      const int64_t inner = std::clamp<int64_t>(wp - g.pw, 0, g.w);
      std::memset(dst, 0, static_cast<size_t>(left * g.c) * sizeof(float));
      std::memcpy(dst + left * g.c, x + ((img * g.h + iy) * g.w) * g.c,
                  static_cast<size_t>(inner * g.c) * sizeof(float));
      const int64_t right = wp - left - inner;
      if (right > 0) {
        std::memset(dst + (left + inner) * g.c, 0,
                    static_cast<size_t>(right * g.c) * sizeof(float));
      }
    }
  });
  return buf;
}

// The input pixels a strided 1x1 convolution reads, gathered contiguous: [n, oh, ow, c].
const float* gathered_input(const ConvGeometry& g, const float* x, ThreadPool& pool) {
  float* buf = pool.scratch(0, ThreadPool::kKernel, static_cast<size_t>(g.n * g.oh * g.ow * g.c));
  const size_t pixel_bytes = static_cast<size_t>(g.c) * sizeof(float);
  pool.parallel_for(g.n * g.oh, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t img = r / g.oh, iy = r % g.oh * g.sh;
      const float* src = x + (img * g.h + iy) * g.w * g.c;
      float* dst = buf + r * g.ow * g.c;
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        std::memcpy(dst + ox * g.c, src + ox * g.sw * g.c, pixel_bytes);
      }
    }
  });
  return buf;
}

DirectConvPlan resolve(const ConvGeometry& g, const DirectSchedule& sc, const DirectShape& d,
                       int threads) {
  DirectConvPlan p;
  p.vectors = d.nv;
  p.tiles_span_rows = runs_flat(g);
  p.pixels_per_tile = p.tiles_span_rows ? d.flat_mr : d.mr;
  p.channels_per_pass = channels_per_pass(g, sc);
  // Threads split output rows, or output channel blocks (each thread then reads only its part of
  // the weights); auto splits channels when there are few rows to share.
  const int64_t rows = g.n * g.oh;
  const bool split_channels = sc.partition == ConvSplit::channels ||
                              (sc.partition == ConvSplit::automatic && rows < 8 * threads);
  p.thread_parts =
      split_channels ? std::clamp<int64_t>(threads, 1, g.groups * d.blocks_per_group) : 1;
  return p;
}

}  // namespace

DirectConvPlan conv2d_direct_plan(const Step& step, int threads) {
  const ConvGeometry g = conv_geometry(step);
  const DirectSchedule sc = direct_schedule(step);
  return resolve(g, sc, direct_shape(g, sc), threads);
}

ir::Attrs conv2d_direct_pin(const Step& step, int threads) {
  const DirectConvPlan p = conv2d_direct_plan(step, threads);
  return {{attrs::kConvVectors, int64_t{p.vectors}},
          {attrs::kConvPartition, std::string(p.thread_parts > 1 ? "channels" : "rows")}};
}

bool conv2d_direct_supports(const Step& s) {
  return is_nhwc(s);
}

std::shared_ptr<const void> conv2d_direct_prepare(const Step& s, const float* const* constants) {
  if (!constants[1]) return nullptr;  // weights computed at run time: packed per call
  // The schedule hook ran first (KernelInfo::schedule): its geometry and tiling.
  const ConvGeometry& g = scheduled_geometry(s);
  auto packed = std::make_shared<PackedWeights>();
  const DirectShape d = direct_shape(g, scheduled_tiling<DirectSchedule>(s));
  packed->data = AlignedArray<float>(packed_floats(g, d));
  pack_weights(g, d, constants[1], packed->data.data());
  return packed;
}

std::shared_ptr<const void> conv2d_direct_schedule(const Step& s) {
  auto schedule = std::make_shared<ConvSchedule>();
  schedule->geometry = conv_geometry(s);
  schedule->tiling = std::make_shared<DirectSchedule>(direct_schedule(s));
  return schedule;
}

void conv2d_direct_nhwc(const KernelArgs& a) {
  const ConvGeometry& g = scheduled_geometry(a.step);
  CUVIL_CHECK(g.nhwc, "conv2d.direct_nhwc on a non-NHWC step " + a.step.node_name);
  const auto* prepared = static_cast<const PackedWeights*>(a.step.prepared.get());
  const DirectSchedule& sc = scheduled_tiling<DirectSchedule>(a.step);
  const DirectShape d = direct_shape(g, sc);
  const float* packed = nullptr;
  if (prepared) {
    packed = prepared->data.data();
  } else {
    float* buf = a.pool.scratch(0, ThreadPool::kKernel2, static_cast<size_t>(packed_floats(g, d)));
    pack_weights(g, d, a.in[1], buf);
    packed = buf;
  }
  const float* bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  const Epilogue epi(a.step, a.in, a.out);
  // The tiles apply the epilogue in registers where it has that form; else it runs on each
  // finished chunk of rows below.
  const LaneEpilogue* lanes = epi.empty() ? nullptr : epi.lanes();

  // The input rows and columns the windows cover (a dilated window spans (k - 1) * d + 1).
  const int64_t hp = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  const int64_t wp = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  const DirectConvPlan plan = resolve(g, sc, d, a.pool.threads());
  const bool flat = plan.tiles_span_rows;
  const bool gathered = flat && (g.sh != 1 || g.sw != 1);
  const float* x =
      gathered ? gathered_input(g, a.in[0], a.pool) : padded_input(g, a.in[0], hp, wp, a.pool);
  const int64_t row_stride = (g.ph == 0 && g.pw == 0 ? g.w : wp) * g.c;
  const int64_t img_stride = (g.ph == 0 && g.pw == 0 ? g.h : hp) * row_stride;
  const int64_t block_floats = g.kh * g.kw * g.cg * d.bw;
  const int64_t chunk = plan.channels_per_pass;
  const int64_t rows = g.n * g.oh;
  const int64_t blocks = g.groups * d.blocks_per_group;
  const int64_t parts = plan.thread_parts;
  // Rows per chunk: the chunk's output (about 1 MiB) stays in L2 for the epilogue. Every chunk
  // reads all the weights again, so chunks are not smaller than that.
  const int64_t chunk_rows = std::max<int64_t>(1, (int64_t{1} << 20) / (g.ow * g.o * 4));

  auto channel_begin = [&](int64_t gb) {
    return (gb / d.blocks_per_group) * g.og + (gb % d.blocks_per_group) * d.bw;
  };
  auto channel_end = [&](int64_t gb) {
    return (gb / d.blocks_per_group) * g.og + std::min(g.og, (gb % d.blocks_per_group + 1) * d.bw);
  };

  // A tile whose window has taps that read only zero padding for all its pixels (a dilated
  // window's outer taps, an edge row's): the tile runs once per 16 input channels and live tap
  // row, over the live columns, accumulating, so dead taps cost nothing while the tiles keep the
  // one loop nest every other window runs.
  auto run_live_taps = [&](const TileArgs& t, TileFn fn, int64_t ki0, int64_t ki1, int64_t kj0,
                           int64_t kj1) {
    TileArgs s = t;
    s.prefetch = s.prefetch_end = nullptr;
    s.kw = kj1 - kj0;
    const int64_t rows = ki1 - ki0, blocks = (t.cg + kLanes - 1) / kLanes;
    if (rows == 0 || s.kw == 0) {  // every tap in the padding: bias and epilogue only
      s.kh = 0;
      fn(s);
      return;
    }
    s.kh = 1;
    for (int64_t blk = 0, call = 0; blk < blocks; ++blk) {
      const int64_t cb = blk * kLanes;
      s.cg = std::min<int64_t>(kLanes, t.cg - cb);
      for (int64_t ki = ki0; ki < ki1; ++ki, ++call) {
        s.x = t.x + ki * t.row_stride + kj0 * t.tap_stride + cb;
        s.w = t.w + cb * g.kh * g.kw * t.bw + (ki * g.kw + kj0) * s.cg * t.bw;
        s.accumulate = call > 0 || t.accumulate;
        s.finish = call == blocks * rows - 1 && t.finish;
        fn(s);
      }
    }
  };

  const DirectTileTable& tile_table = tiles();
  auto tile_fn = [&tile_table](int mr, int nv) { return tile_table[register_tile_index(mr, nv)]; };

  auto run_rows = [&](int64_t r0, int64_t r1, int64_t gb0, int64_t gb1) {
    const int64_t passes = (g.cg + chunk - 1) / chunk;
    const int64_t tile_px = plan.pixels_per_tile;
    const int64_t tiles_per_pass = flat ? ((r1 - r0) * g.ow + tile_px - 1) / tile_px
                                        : (r1 - r0) * ((g.ow + tile_px - 1) / tile_px);
    const int64_t block_lines = block_floats * int64_t{sizeof(float)} / 64;
    const int64_t lines_per_tile =
        (block_lines + passes * tiles_per_pass - 1) / (passes * tiles_per_pass);
    const int64_t groups_per_tile = (chunk + kLanes - 1) / kLanes * g.kh * g.kw;
    for (int64_t gb = gb0; gb < gb1; ++gb) {
      const int64_t grp = gb / d.blocks_per_group, b = gb % d.blocks_per_group;
      const int64_t width = std::min(d.bw, g.og - b * d.bw);
      const int nv = static_cast<int>((width + kLanes - 1) / kLanes);
      TileArgs t{};
      t.prefetch_lines_per_group =
          static_cast<int>((lines_per_tile + groups_per_tile - 1) / groups_per_tile);
      t.pix_stride = gathered ? g.c : g.sw * g.c;
      t.row_stride = g.dh * row_stride;  // between a window's tap rows
      t.tap_stride = g.dw * g.c;
      t.kh = g.kh, t.kw = g.kw;
      t.bw = d.bw;
      t.y_pix_stride = g.o;
      t.bias = bias ? bias + grp * g.og + b * d.bw : nullptr;
      t.epilogue = lanes;
      t.col = grp * g.og + b * d.bw;
      const int64_t rem = width - int64_t{nv - 1} * kLanes;
      t.tail_mask = static_cast<uint16_t>(rem >= kLanes ? 0xffffu : (1u << rem) - 1u);
      const TileFn full = tile_fn(static_cast<int>(tile_px), nv);
      // The next block's weights, a slice per tile call while this block runs.
      const bool prefetch = sc.prefetch_weights && gb + 1 < gb1;
      const char* next =
          prefetch ? reinterpret_cast<const char*>(packed + (gb + 1) * block_floats) : nullptr;
      const char* next_end = prefetch ? next + block_lines * 64 : nullptr;
      auto run_tile = [&](TileFn fn) {
        if (prefetch) {
          t.prefetch = std::min(next, next_end);
          next += lines_per_tile * 64;
          t.prefetch_end = std::min(next, next_end);
        }
        fn(t);
      };
      for (int64_t c0 = 0; c0 < g.cg; c0 += chunk) {
        t.cg = std::min(chunk, g.cg - c0);
        t.w = packed + gb * block_floats + c0 * g.kh * g.kw * d.bw;
        t.accumulate = c0 > 0;
        t.finish = c0 + t.cg == g.cg;
        if (flat) {
          const float* xp = x + grp * g.cg + c0;
          float* yp = a.out + grp * g.og + b * d.bw;
          for (int64_t pix = r0 * g.ow; pix < r1 * g.ow; pix += tile_px) {
            const int mr = static_cast<int>(std::min<int64_t>(tile_px, r1 * g.ow - pix));
            t.x = xp + pix * g.c;
            t.y = yp + pix * g.o;
            run_tile(mr == tile_px ? full : tile_fn(mr, nv));
          }
          continue;
        }
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t img = r / g.oh, oy = r % g.oh;
          const float* xrow = x + img * img_stride + oy * g.sh * row_stride + grp * g.cg + c0;
          float* yrow = a.out + r * g.ow * g.o + grp * g.og + b * d.bw;
          // The window's rows inside the input (the others read only padding).
          const int64_t iy0 = oy * g.sh - g.ph;
          const int64_t ki0 = first_tap_inside(iy0, g.dh, g.kh);
          const int64_t ki1 = end_tap_inside(iy0, g.h, g.dh, g.kh);
          for (int64_t ox = 0; ox < g.ow; ox += tile_px) {
            const int mr = static_cast<int>(std::min<int64_t>(tile_px, g.ow - ox));
            t.x = xrow + ox * g.sw * g.c;
            t.y = yrow + ox * g.o;
            const TileFn fn = mr == tile_px ? full : tile_fn(mr, nv);
            // Columns some pixel of the tile reads inside the input.
            const int64_t kj0 = first_tap_inside((ox + mr - 1) * g.sw - g.pw, g.dw, g.kw);
            const int64_t kj1 = std::max(kj0, end_tap_inside(ox * g.sw - g.pw, g.w, g.dw, g.kw));
            if (ki1 - ki0 == g.kh && kj1 - kj0 == g.kw) {
              run_tile(fn);
            } else {
              run_live_taps(t, fn, ki0, ki1, kj0, kj1);
            }
          }
        }
      }
    }
    if (epi.empty() || lanes) return;
    if (gb0 == 0 && gb1 == blocks) {
      epi.apply(a.out + r0 * g.ow * g.o, (r1 - r0) * g.ow * g.o);
      return;
    }
    const int64_t c0 = channel_begin(gb0), c1 = channel_end(gb1 - 1);
    for (int64_t pix = r0 * g.ow; pix < r1 * g.ow; ++pix)
      epi.apply(a.out + pix * g.o + c0, c1 - c0);
  };

  a.pool.parallel_for(parts * rows, [&](int64_t i0, int64_t i1) {
    for (int64_t part = i0 / rows; part * rows < i1; ++part) {
      const int64_t r0 = std::max(i0, part * rows) - part * rows;
      const int64_t r1 = std::min(i1, (part + 1) * rows) - part * rows;
      const int64_t gb0 = part * blocks / parts, gb1 = (part + 1) * blocks / parts;
      for (int64_t c = r0; c < r1; c += chunk_rows)
        run_rows(c, std::min(r1, c + chunk_rows), gb0, gb1);
    }
  });
}

}  // namespace cuvil::runtime::cpu
