// conv2d.direct_nhwc: direct convolution on NHWC activations, no im2col buffer. The weights are
// packed once (prepare hook) into blocks of 16..64 output channels, [group][block][kh][kw][cg]
// [block width], zero padded past the group's channels. A register tile of MR output pixels of one
// row x NV vectors of 16 output channels (MR * NV <= 28 accumulators) walks the kh x kw x cg
// window: per input channel it loads NV weight vectors and broadcasts one input value per pixel.
// Padding is materialised once per call in a zero-bordered copy of the input, so the inner loops
// have no bounds checks. Threads split output rows (or, for small images, output channel blocks);
// bias is added in registers and the epilogue runs on each finished chunk while it is in cache.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "passes/ir/error.h"
#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int kLanes = 16;
constexpr int kMaxAccumulators = 28;  // of 32 vector registers: the rest hold weights and input
constexpr int kMaxMR = 14;
constexpr int kMaxNV = 4;

struct DirectShape {
  int nv = 1;                    // vectors per output-channel block
  int64_t bw = kLanes;           // block width in channels (nv * 16)
  int64_t blocks_per_group = 1;  // ceil(og / bw)
  int mr = 1;                    // output pixels per tile
};

DirectShape direct_shape(const ConvGeometry& g) {
  DirectShape d;
  d.nv = static_cast<int>(std::clamp<int64_t>((g.og + kLanes - 1) / kLanes, 1, kMaxNV));
  d.bw = int64_t{d.nv} * kLanes;
  d.blocks_per_group = (g.og + d.bw - 1) / d.bw;
  const int64_t mr_max = std::min<int64_t>(kMaxMR, kMaxAccumulators / d.nv);
  const int64_t tiles = (g.ow + mr_max - 1) / mr_max;
  d.mr = static_cast<int>((g.ow + tiles - 1) / tiles);  // even tiles: 56 -> 8 x 7, 28 -> 4 x 7
  return d;
}

int64_t packed_floats(const ConvGeometry& g, const DirectShape& d) {
  return g.groups * d.blocks_per_group * g.kh * g.kw * g.cg * d.bw;
}

// w[O, cg, kh, kw] -> [group][block][kh][kw][cg][bw].
void pack_weights(const ConvGeometry& g, const DirectShape& d, const float* w, float* out) {
  const int64_t khw = g.kh * g.kw;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    for (int64_t b = 0; b < d.blocks_per_group; ++b) {
      for (int64_t k = 0; k < khw; ++k) {
        for (int64_t c = 0; c < g.cg; ++c) {
          for (int64_t lane = 0; lane < d.bw; ++lane) {
            const int64_t oc = b * d.bw + lane;
            *out++ = oc < g.og ? w[((grp * g.og + oc) * g.cg + c) * khw + k] : 0.0f;
          }
        }
      }
    }
  }
}

struct PackedWeights {
  std::vector<float> data;
};

struct TileArgs {
  const float* x;      // input window origin of the tile's first pixel, group's first channel
  int64_t pix_stride;  // floats between consecutive output pixels' windows (sw * C)
  int64_t row_stride;  // floats between input rows
  int64_t tap_stride;  // floats between horizontal taps (C)
  int64_t kh, kw, cg;
  const float* w;  // packed block [kh][kw][cg][bw]
  int64_t bw;
  float* y;              // output of the first pixel at the block's first channel
  int64_t y_pix_stride;  // O
  const float* bias;     // at the block's first channel, or null
  uint16_t tail_mask;    // valid lanes of the last vector
};

using TileFn = void (*)(const TileArgs&);

#if defined(__AVX512F__)
template <int MR, int NV>
void tile(const TileArgs& t) {
  __m512 acc[MR][NV];
  for (int p = 0; p < MR; ++p) {
    for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_setzero_ps();
  }
  const float* wp = t.w;
  for (int64_t ki = 0; ki < t.kh; ++ki) {
    for (int64_t kj = 0; kj < t.kw; ++kj) {
      const float* xc = t.x + ki * t.row_stride + kj * t.tap_stride;
      for (int64_t c = 0; c < t.cg; ++c, wp += t.bw) {
        __m512 wv[NV];
        for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(wp + v * kLanes);
        for (int p = 0; p < MR; ++p) {
          const __m512 xb = _mm512_set1_ps(xc[p * t.pix_stride + c]);
          for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_fmadd_ps(xb, wv[v], acc[p][v]);
        }
      }
    }
  }
  for (int v = 0; v < NV; ++v) {
    const __mmask16 m = v == NV - 1 ? t.tail_mask : 0xffff;
    const __m512 b = t.bias ? _mm512_maskz_loadu_ps(m, t.bias + v * kLanes) : _mm512_setzero_ps();
    for (int p = 0; p < MR; ++p) {
      _mm512_mask_storeu_ps(t.y + p * t.y_pix_stride + v * kLanes, m, _mm512_add_ps(acc[p][v], b));
    }
  }
}
#else
// Portable fallback with the same data layout (no AVX-512 at build time).
template <int MR, int NV>
void tile(const TileArgs& t) {
  float acc[MR][NV * kLanes] = {};
  const float* wp = t.w;
  for (int64_t ki = 0; ki < t.kh; ++ki) {
    for (int64_t kj = 0; kj < t.kw; ++kj) {
      const float* xc = t.x + ki * t.row_stride + kj * t.tap_stride;
      for (int64_t c = 0; c < t.cg; ++c, wp += t.bw) {
        for (int p = 0; p < MR; ++p) {
          const float xv = xc[p * t.pix_stride + c];
          for (int l = 0; l < NV * kLanes; ++l) acc[p][l] += xv * wp[l];
        }
      }
    }
  }
  for (int v = 0; v < NV; ++v) {
    const unsigned m = v == NV - 1 ? t.tail_mask : 0xffffu;
    for (int l = 0; l < kLanes; ++l) {
      if (!(m >> l & 1u)) continue;
      const float b = t.bias ? t.bias[v * kLanes + l] : 0.0f;
      for (int p = 0; p < MR; ++p)
        t.y[p * t.y_pix_stride + v * kLanes + l] = acc[p][v * kLanes + l] + b;
    }
  }
}
#endif

template <int MR, int NV>
constexpr TileFn tile_or_null() {
  if constexpr (MR * NV <= kMaxAccumulators) {
    return &tile<MR, NV>;
  } else {
    return nullptr;
  }
}

template <size_t... I>
constexpr std::array<TileFn, sizeof...(I)> make_tiles(std::index_sequence<I...>) {
  return {tile_or_null<static_cast<int>(I / kMaxNV) + 1, static_cast<int>(I % kMaxNV) + 1>()...};
}

// kTiles[(mr - 1) * kMaxNV + (nv - 1)]
constexpr auto kTiles = make_tiles(std::make_index_sequence<kMaxMR * kMaxNV>{});

TileFn tile_fn(int mr, int nv) {
  return kTiles[static_cast<size_t>((mr - 1) * kMaxNV + (nv - 1))];
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

}  // namespace

bool conv2d_direct_supports(const Step& s) {
  return is_nhwc(s);
}

std::shared_ptr<const void> conv2d_direct_prepare(const Step& s, const float* const* constants) {
  if (!constants[1]) return nullptr;  // weights computed at run time: packed per call
  const ConvGeometry g = conv_geometry(s);
  const DirectShape d = direct_shape(g);
  auto packed = std::make_shared<PackedWeights>();
  packed->data.resize(static_cast<size_t>(packed_floats(g, d)));
  pack_weights(g, d, constants[1], packed->data.data());
  return packed;
}

void conv2d_direct_nhwc(const KernelArgs& a) {
  const ConvGeometry g = conv_geometry(a.step);
  CUVIL_CHECK(g.nhwc, "conv2d.direct_nhwc on a non-NHWC step " + a.step.node_name);
  const DirectShape d = direct_shape(g);
  const float* packed = nullptr;
  if (a.step.prepared) {
    packed = static_cast<const PackedWeights*>(a.step.prepared.get())->data.data();
  } else {
    float* buf = a.pool.scratch(0, ThreadPool::kKernel2, static_cast<size_t>(packed_floats(g, d)));
    pack_weights(g, d, a.in[1], buf);
    packed = buf;
  }
  const float* bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  const Epilogue epi(a.step, a.in, a.out);

  const int64_t hp = (g.oh - 1) * g.sh + g.kh, wp = (g.ow - 1) * g.sw + g.kw;
  const float* x = padded_input(g, a.in[0], hp, wp, a.pool);
  const int64_t row_stride = (g.ph == 0 && g.pw == 0 ? g.w : wp) * g.c;
  const int64_t img_stride = (g.ph == 0 && g.pw == 0 ? g.h : hp) * row_stride;
  const int64_t block_floats = g.kh * g.kw * g.cg * d.bw;

  const int threads = a.pool.threads();
  const int64_t rows = g.n * g.oh;
  const int64_t blocks = g.groups * d.blocks_per_group;
  // Few rows: split output channels instead, so each thread reads only its part of the weights.
  const int64_t parts = rows >= 8 * threads ? 1 : std::clamp<int64_t>(threads, 1, blocks);
  // Rows per chunk: the chunk's output stays in L2 for the epilogue.
  const int64_t chunk_rows = std::max<int64_t>(1, (int64_t{128} << 10) / (g.ow * g.o));

  auto channel_begin = [&](int64_t gb) {
    return (gb / d.blocks_per_group) * g.og + (gb % d.blocks_per_group) * d.bw;
  };
  auto channel_end = [&](int64_t gb) {
    return (gb / d.blocks_per_group) * g.og + std::min(g.og, (gb % d.blocks_per_group + 1) * d.bw);
  };

  auto run_rows = [&](int64_t r0, int64_t r1, int64_t gb0, int64_t gb1) {
    for (int64_t gb = gb0; gb < gb1; ++gb) {
      const int64_t grp = gb / d.blocks_per_group, b = gb % d.blocks_per_group;
      const int64_t width = std::min(d.bw, g.og - b * d.bw);
      const int nv = static_cast<int>((width + kLanes - 1) / kLanes);
      TileArgs t{};
      t.pix_stride = g.sw * g.c;
      t.row_stride = row_stride;
      t.tap_stride = g.c;
      t.kh = g.kh, t.kw = g.kw, t.cg = g.cg;
      t.w = packed + gb * block_floats;
      t.bw = d.bw;
      t.y_pix_stride = g.o;
      t.bias = bias ? bias + grp * g.og + b * d.bw : nullptr;
      const int64_t rem = width - int64_t{nv - 1} * kLanes;
      t.tail_mask = static_cast<uint16_t>(rem >= kLanes ? 0xffffu : (1u << rem) - 1u);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t img = r / g.oh, oy = r % g.oh;
        const float* xrow = x + img * img_stride + oy * g.sh * row_stride + grp * g.cg;
        float* yrow = a.out + r * g.ow * g.o + grp * g.og + b * d.bw;
        for (int64_t ox = 0; ox < g.ow; ox += d.mr) {
          const int mr = static_cast<int>(std::min<int64_t>(d.mr, g.ow - ox));
          t.x = xrow + ox * g.sw * g.c;
          t.y = yrow + ox * g.o;
          tile_fn(mr, nv)(t);
        }
      }
    }
    if (epi.empty()) return;
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
