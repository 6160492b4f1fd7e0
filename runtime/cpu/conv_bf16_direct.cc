#include "runtime/cpu/conv_bf16_direct.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/register_rows.h"

// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register and warn about it
// where they are inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

// The tiles and the conversion are compiled for AVX512_BF16 whatever -march says; they run only
// after cpu_has_avx512_bf16().
#include "runtime/cpu/target_attributes.h"

// The register-tile epilogue and lane masks, compiled for AVX-512 (inlined into the bf16 code).
#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/bf16_round_avx512.h"
#include "runtime/cpu/elementwise_math_avx512.h"
#include "runtime/cpu/epilogue_lanes_avx512.h"

#include "runtime/cpu/target_end.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int64_t kLanes = 16;
constexpr int kMaxVectors = 4;  // 16-channel vectors of output channels per tile

// Output pixels per tile of NV vectors: R * NV accumulators, NV weight vectors and a broadcast
// within 32 registers, and at least 12 independent accumulators to hide VDPBF16PS's latency.
template <int NV>
constexpr int kTileRows = NV == 4   ? 6
                          : NV == 3 ? 8
                                    : 12;

CUVIL_BF16_TARGET inline __m512bh as_bh(__m512i v) {
  return reinterpret_cast<__m512bh&>(v);
}

// acc[R][NV] over every kernel row and pair: x holds the tile's first pixel's window (kernel row
// 0, pair 0) in the bf16 copy, pixels pix_words apart, kernel rows row_words apart; w is the
// block's first channel in the packed weights. Then bias, the epilogue's lane form, and the
// store of `tail`'s lanes of the last vector.
template <int R, int NV>
CUVIL_BF16_TARGET void tile(const uint32_t* x, int64_t pix_words, int64_t row_words, int64_t kh,
                            int64_t row_pairs, const uint32_t* w, int64_t ldw, float* y,
                            int64_t ldy, const float* bias, const LaneEpilogue* lanes, int64_t col,
                            __mmask16 tail) {
  __m512 acc[R][NV];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t ki = 0; ki < kh; ++ki) {
    const uint32_t* xr = x + ki * row_words;
    const uint32_t* wr = w + ki * row_pairs * ldw;
    for (int64_t j = 0; j < row_pairs; ++j) {
      __m512bh wv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) wv[v] = as_bh(_mm512_loadu_si512(wr + j * ldw + v * kLanes));
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        const __m512bh a = as_bh(_mm512_set1_epi32(static_cast<int>(xr[r * pix_words + j])));
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, wv[v]);
      }
    }
  }
  if (bias) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __m512 b =
          _mm512_maskz_loadu_ps(v == NV - 1 ? tail : __mmask16{0xffff}, bias + v * kLanes);
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) acc[r][v] = _mm512_add_ps(acc[r][v], b);
    }
  }
  if (lanes) avx512::epilogue_lanes(*lanes, acc, y, ldy, col, tail);
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      _mm512_mask_storeu_ps(y + r * ldy + v * kLanes, v == NV - 1 ? tail : __mmask16{0xffff},
                            acc[r][v]);
    }
  }
}

// The zero-bordered bf16 copies of one image: the padded rows and columns the windows read. A
// window that starts at an odd element (stride x channels odd, an odd pixel) reads a second copy
// shifted by one element, where it starts on a whole pair.
struct PaddedCopy {
  int64_t rows = 0, cols = 0;  // padded rows and columns
  int64_t shifts = 1;          // copies: 1, or 2 where stride x channels is odd
  int64_t row_words = 0;       // a row: cols * c elements, the shift and an odd end's pair
  int64_t copy_words = 0;      // one copy of one image

  explicit PaddedCopy(const LowpConv& g)
      : rows((g.oh - 1) * g.sh + g.kh),
        cols((g.ow - 1) * g.sw + g.kw),
        shifts((g.sw * g.c) % 2 == 0 ? 1 : 2),
        row_words((cols * g.c + 3) / 2),
        copy_words(rows * row_words) {}
  uint32_t* row(uint32_t* base, int64_t img, int64_t shift, int64_t r) const {
    return base + (img * shifts + shift) * copy_words + r * row_words;
  }
};

// Row r of image img's copy `shift` from x: element e of the padded row at e + shift, zero
// outside the image and around it.
void copy_row(const LowpConv& g, const PaddedCopy& p, const float* x, int64_t img, int64_t shift,
              int64_t r, uint32_t* copy) {
  auto* dst = reinterpret_cast<uint16_t*>(p.row(copy, img, shift, r));
  const int64_t elements = 2 * p.row_words;
  const int64_t iy = r - g.ph;
  // Padded columns [q0, q1) hold image columns [q0 - pw, q1 - pw).
  const int64_t q0 = std::min(g.pw, p.cols), q1 = std::clamp(g.pw + g.w, q0, p.cols);
  if (iy < 0 || iy >= g.h || q1 <= q0) {
    std::memset(dst, 0, static_cast<size_t>(elements) * sizeof(uint16_t));
    return;
  }
  const int64_t first = shift + q0 * g.c, end = shift + q1 * g.c;  // the image's elements
  std::memset(dst, 0, static_cast<size_t>(first) * sizeof(uint16_t));
  round_to_bf16(x + ((img * g.h + iy) * g.w + (q0 - g.pw)) * g.c, end - first, dst + first);
  std::memset(dst + end, 0, static_cast<size_t>(elements - end) * sizeof(uint16_t));
}

struct RowArgs {
  const LowpConv& g;
  const PaddedCopy& p;
  const Bf16DirectWeights& w;
  uint32_t* copy;
  const float* bias;
  const LaneEpilogue* lanes;  // the epilogue in registers, or null
  float* y;
};

// Pixels of one output row that are read alike: `count` of them, windows pix_words apart from
// x, outputs ldy floats apart from y.
struct PixelRun {
  const uint32_t* x;
  int64_t pix_words;
  float* y;
  int64_t ldy;
  int64_t count;
};

// Output row oy of image img, channels [col, col + NV * 16) (fewer in the last vector): every
// pixel from the one copy where stride x channels is even, else the even pixels from the first
// copy and the odd ones from the shifted copy, each a run of every other pixel.
template <int NV>
void block_row(const RowArgs& a, int64_t img, int64_t oy, int64_t col) {
  const LowpConv& g = a.g;
  const int64_t step = g.sw * g.c;  // elements between consecutive pixels' windows
  const int64_t r0 = oy * g.sh;     // the windows' first padded row
  float* y = a.y + ((img * g.oh + oy) * g.ow) * g.o + col;
  PixelRun runs[2];
  int n_runs = 0;
  if (a.p.shifts == 1) {
    runs[n_runs++] = {a.p.row(a.copy, img, 0, r0), step / 2, y, g.o, g.ow};
  } else {
    runs[n_runs++] = {a.p.row(a.copy, img, 0, r0), step, y, 2 * g.o, (g.ow + 1) / 2};
    // Pixel 1's window starts at element `step` (odd): at step + 1 in the shifted copy.
    runs[n_runs++] = {a.p.row(a.copy, img, 1, r0) + (step + 1) / 2, step, y + g.o, 2 * g.o,
                      g.ow / 2};
  }
  const uint32_t* w = a.w.words.data() + col;
  const int64_t last = g.o - col - (NV - 1) * kLanes;  // channels in the last vector
  const __mmask16 tail = avx512::first_lanes(last);
  const float* bias = a.bias ? a.bias + col : nullptr;
  for (int i = 0; i < n_runs; ++i) {
    const PixelRun& run = runs[i];
    // Even tiles: every tile streams the block's weights once, so 7 pixels run as 4 + 3, not as
    // 6 + a 1-pixel tile that loads as much for a sixth of the work (ViT-B/32's patch embedding).
    const int64_t tiles = ceil_div(run.count, kTileRows<NV>);
    const int64_t per_tile = tiles > 0 ? ceil_div(run.count, tiles) : 0;
    for (int64_t t = 0; t < run.count; t += per_tile) {
      const int rows = static_cast<int>(std::min(per_tile, run.count - t));
      with_rows<kTileRows<NV>>(rows, [&](auto r) {
        tile<decltype(r)::value, NV>(run.x + t * run.pix_words, run.pix_words, a.p.row_words, g.kh,
                                     a.w.row_pairs, w, a.w.o_pad, run.y + t * run.ldy, run.ldy,
                                     bias, a.lanes, col, tail);
      });
    }
  }
}

void output_row(const RowArgs& a, int64_t img, int64_t oy) {
  for (int64_t col = 0; col < a.g.o; col += kMaxVectors * kLanes) {
    switch (std::min<int64_t>(kMaxVectors, ceil_div(a.g.o - col, kLanes))) {
      case 1:
        block_row<1>(a, img, oy, col);
        break;
      case 2:
        block_row<2>(a, img, oy, col);
        break;
      case 3:
        block_row<3>(a, img, oy, col);
        break;
      default:
        block_row<4>(a, img, oy, col);
        break;
    }
  }
}

}  // namespace

std::shared_ptr<Bf16DirectWeights> pack_bf16_direct_weights(const LowpConv& g, const float* w) {
  CUVIL_CHECK(bf16_conv_runs_direct(g), "pack_bf16_direct_weights: not a direct bf16 conv");
  auto p = std::make_shared<Bf16DirectWeights>();
  const int64_t row = g.kw * g.c;  // elements of one kernel row
  p->row_pairs = (row + 1) / 2;
  p->o_pad = round_up(g.o, kLanes);
  p->words = AlignedArray<uint32_t>(g.kh * p->row_pairs * p->o_pad);  // zeroed
  auto element = [&](int64_t o, int64_t ki, int64_t e) {  // e: index within the kernel row
    return e < row ? w[((o * g.c + e % g.c) * g.kh + ki) * g.kw + e / g.c] : 0.0f;
  };
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    for (int64_t j = 0; j < p->row_pairs; ++j) {
      uint32_t* dst = p->words.data() + (ki * p->row_pairs + j) * p->o_pad;
      for (int64_t o = 0; o < g.o; ++o) {
        dst[o] = bf16_pair(element(o, ki, 2 * j), element(o, ki, 2 * j + 1));
      }
    }
  }
  return p;
}

void conv2d_bf16_direct(const LowpConv& g, const Bf16DirectWeights& w, const float* x,
                        const float* bias, const Epilogue& epi, float* y, ThreadPool& pool) {
  CUVIL_CHECK(cpu_has_avx512_bf16() && bf16_conv_runs_direct(g),
              "conv2d_bf16_direct: not a direct bf16 convolution on this CPU");
  const PaddedCopy p(g);
  // The calling thread's buffer, shared read-only once written.
  auto* copy =
      reinterpret_cast<uint32_t*>(pool.scratch(pool.current_thread(), ThreadPool::kKernel,
                                               static_cast<size_t>(g.n * p.shifts * p.copy_words)));
  pool.parallel_for(g.n * p.shifts * p.rows, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t r = t % p.rows, copy_index = t / p.rows;
      copy_row(g, p, x, copy_index / p.shifts, copy_index % p.shifts, r, copy);
    }
  });
  const LaneEpilogue* lanes = epi.empty() ? nullptr : epi.lanes();
  const RowArgs args{g, p, w, copy, bias, lanes, y};
  pool.parallel_for_balanced(g.n * g.oh, [&](int, int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      output_row(args, t / g.oh, t % g.oh);
      // An epilogue without a lane form runs on the finished row while it is in cache.
      if (!epi.empty() && !lanes) epi.apply(y + t * g.ow * g.o, g.ow * g.o);
    }
  });
}

}  // namespace cuvil::runtime::cpu
