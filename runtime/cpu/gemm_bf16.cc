#include "runtime/cpu/gemm_bf16.h"

#include <algorithm>

#include "base/error.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/gemm_loops.h"
#include "runtime/cpu/gemm_partition.h"
#include "runtime/thread_pool.h"

// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register and warn about it
// where they are inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "runtime/cpu/amx_tiles.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/register_rows.h"
// The products are compiled for AVX512_BF16 (or AMX) whatever -march says; they run only after
// cpu_has_avx512_bf16() (cpu_has_amx_bf16()).
#include "runtime/cpu/target_attributes.h"

// The register-tile epilogue, the sliver transpose and lane masks, compiled for AVX-512 (inlined
// into the bf16 code only).
#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/bf16_round_avx512.h"
#include "runtime/cpu/elementwise_math_avx512.h"
#include "runtime/cpu/epilogue_lanes_avx512.h"
#include "runtime/cpu/gemm_bf16_tiles.h"
#include "runtime/cpu/transpose_avx512.h"

#include "runtime/cpu/target_end.h"

namespace cuvil::runtime::cpu {

namespace {

using namespace bf16_tiles;

// Compiled for the bf16 target too: a 64-byte vector passed by value outside it changes the ABI.
CUVIL_BF16_TARGET inline __m512bh as_bh(__m512i v) {
  return reinterpret_cast<__m512bh&>(v);
}

// C[R, NR] (+)= A-sliver x B-sliver over kp K pairs; fp32 accumulators; the A sliver is MR rows
// wide whatever R (an edge tile uses its first R rows). With `finish`, bias and epilogue are
// applied before the store. S accumulator sets take alternate K pairs: a tile of few rows has too
// few independent VDPBF16PS chains to hide their latency with one set.
template <int R, int S>
CUVIL_BF16_TARGET void micro(int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                             int64_t ldc, bool accumulate, const TileFinish* finish,
                             NextSliver next) {
  static_assert(R >= 1 && R <= MR && (S == 1 || S == 2), "a tile of 1..MR rows, 1 or 2 sets");
  __m512 acc[R][2];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  int64_t p = 0;
  if constexpr (S == 2) {
    __m512 odd[R][2];
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) odd[i][0] = odd[i][1] = _mm512_setzero_ps();
    for (; p + 2 <= kp; p += 2) {
      const __m512bh b0 = as_bh(_mm512_loadu_si512(b));
      const __m512bh b1 = as_bh(_mm512_loadu_si512(b + 16));
      const __m512bh b2 = as_bh(_mm512_loadu_si512(b + NR));
      const __m512bh b3 = as_bh(_mm512_loadu_si512(b + NR + 16));
      _mm_prefetch(reinterpret_cast<const char*>(b + 8 * NR), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + 9 * NR), _MM_HINT_T0);
      next.step();
#pragma GCC unroll 12
      for (int i = 0; i < R; ++i) {
        const __m512bh ai = as_bh(_mm512_set1_epi32(static_cast<int>(a[i])));
        const __m512bh aj = as_bh(_mm512_set1_epi32(static_cast<int>(a[MR + i])));
        acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
        acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        odd[i][0] = _mm512_dpbf16_ps(odd[i][0], aj, b2);
        odd[i][1] = _mm512_dpbf16_ps(odd[i][1], aj, b3);
      }
      a += 2 * MR;
      b += 2 * NR;
    }
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      acc[i][0] = _mm512_add_ps(acc[i][0], odd[i][0]);
      acc[i][1] = _mm512_add_ps(acc[i][1], odd[i][1]);
    }
  }
  for (; p < kp; ++p) {
    const __m512bh b0 = as_bh(_mm512_loadu_si512(b));
    const __m512bh b1 = as_bh(_mm512_loadu_si512(b + 16));
    _mm_prefetch(reinterpret_cast<const char*>(b + 8 * NR), _MM_HINT_T0);
    next.step();
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      const __m512bh ai = as_bh(_mm512_set1_epi32(static_cast<int>(a[i])));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
    a += MR;
    b += NR;
  }
  store_tile<R>(acc, c, ldc, accumulate, finish);
}

// The tile of `rows` rows (1..MR): a full one, or the edge of a panel whose rows are not a
// multiple of MR (ResNet-50's 7 x 7 = 49 pixels: four tiles of 12 and one of 1, which cost as
// much as a full tile before it had its own count).
inline void micro_rows(int rows, int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                       int64_t ldc, bool accumulate, const TileFinish* finish, NextSliver next) {
  with_rows<MR>(rows, [&](auto r) {
    constexpr int R = decltype(r)::value;
    micro<R, (R <= kTwoSetRows ? 2 : 1)>(kp, a, b, c, ldc, accumulate, finish, next);
  });
}

// Converts rows [0, rows) x columns [k0, k1) of fp32 A into MR-row slivers of K pairs:
// dst[sliver][p][i] (kp pairs per sliver, zero-padded rows and odd tail). 16 pairs of MR rows
// at a time are converted and transposed in registers (a scatter per row was a third of a
// K = 64 product's time). Not inlined: inlined into the loop nest, the packing of ResNet-50's
// 1x1 convolutions ran 15-20% slower (cuvil-micro-conv, layer3_1x1_256_1024).
template <class Rows>
CUVIL_BF16_TARGET __attribute__((noinline)) void pack_a(Rows& src, int64_t rows, int64_t k0,
                                                        int64_t k1, int64_t kp, uint32_t* dst) {
  static_assert(MR <= 16, "a sliver's rows are lanes of one vector");
  const int64_t len = k1 - k0;
  constexpr __mmask16 kRows = static_cast<__mmask16>((1u << MR) - 1u);
  for (int64_t r0 = 0; r0 < rows; r0 += MR) {
    const int64_t mr = std::min<int64_t>(MR, rows - r0);
    src.begin_sliver(r0, mr);
    uint32_t* d = dst + r0 * kp;
    for (int64_t p0 = 0; p0 < kp; p0 += 16) {
      const int64_t floats = std::min<int64_t>(32, len - 2 * p0);
      const __mmask16 lo = avx512::first_lanes(floats);
      const __mmask16 hi = avx512::first_lanes(std::max<int64_t>(0, floats - 16));
      src.begin_k(k0 + 2 * p0, k1);
      __m512i r[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) {
        if (i >= mr) {
          r[i] = _mm512_setzero_si512();
          continue;
        }
        const __m512bh v = _mm512_cvtne2ps_pbh(src.half(i, 1, hi), src.half(i, 0, lo));
        r[i] = reinterpret_cast<const __m512i&>(v);
      }
      avx512::transpose16x16_epi32(r);
      const int64_t pairs = std::min<int64_t>(16, kp - p0);
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c) {
        if (c < pairs) _mm512_mask_storeu_epi32(d + (p0 + c) * MR, kRows, r[c]);
      }
    }
  }
}

// Rows of A converted to K pairs, contiguous: dst[r][p]; an odd K's last pair ends in a zero.
CUVIL_BF16_TARGET void convert_rows(const float* a, int64_t lda, int64_t rows, int64_t k,
                                    uint32_t* dst) {
  const int64_t kp = ceil_div(k, 2);
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* row = reinterpret_cast<uint16_t*>(dst + r * kp);
    round_to_bf16(a + r * lda, k, row);
    if (k % 2 != 0) row[k] = 0;
  }
}

// Few rows: stream each packed B sliver once, M rows at a time; two accumulator sets per row
// hide the VDPBF16PS latency.
template <int M>
CUVIL_BF16_TARGET void skinny(const Bf16Gemm& g, const uint32_t* ap, int64_t s0, int64_t s1) {
  const int64_t kp = ceil_div(g.k, 2);
  for (int64_t s = s0; s < s1; ++s) {
    const uint32_t* b = g.b + s * kp * NR;
    __m512 acc[M][4];
#pragma GCC unroll 4
    for (int m = 0; m < M; ++m) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 2 <= kp; p += 2) {
      prefetch_skinny_ahead(b + p * NR);
      const __m512bh b0 = as_bh(_mm512_loadu_si512(b + p * NR));
      const __m512bh b1 = as_bh(_mm512_loadu_si512(b + p * NR + 16));
      const __m512bh b2 = as_bh(_mm512_loadu_si512(b + p * NR + 32));
      const __m512bh b3 = as_bh(_mm512_loadu_si512(b + p * NR + 48));
#pragma GCC unroll 4
      for (int m = 0; m < M; ++m) {
        const __m512bh a0 = as_bh(_mm512_set1_epi32(static_cast<int>(ap[m * kp + p])));
        const __m512bh a1 = as_bh(_mm512_set1_epi32(static_cast<int>(ap[m * kp + p + 1])));
        acc[m][0] = _mm512_dpbf16_ps(acc[m][0], a0, b0);
        acc[m][1] = _mm512_dpbf16_ps(acc[m][1], a0, b1);
        acc[m][2] = _mm512_dpbf16_ps(acc[m][2], a1, b2);
        acc[m][3] = _mm512_dpbf16_ps(acc[m][3], a1, b3);
      }
    }
    for (; p < kp; ++p) {
      const __m512bh b0 = as_bh(_mm512_loadu_si512(b + p * NR));
      const __m512bh b1 = as_bh(_mm512_loadu_si512(b + p * NR + 16));
#pragma GCC unroll 4
      for (int m = 0; m < M; ++m) {
        const __m512bh a0 = as_bh(_mm512_set1_epi32(static_cast<int>(ap[m * kp + p])));
        acc[m][0] = _mm512_dpbf16_ps(acc[m][0], a0, b0);
        acc[m][1] = _mm512_dpbf16_ps(acc[m][1], a0, b1);
      }
    }
    store_skinny_rows<M>(g, s, acc);
  }
}

void skinny_rows(const Bf16Gemm& g, const uint32_t* ap, int64_t s0, int64_t s1) {
  switch (g.m) {
    case 1:
      return skinny<1>(g, ap, s0, s1);
    case 2:
      return skinny<2>(g, ap, s0, s1);
    case 3:
      return skinny<3>(g, ap, s0, s1);
    default:
      return skinny<4>(g, ap, s0, s1);
  }
}

constexpr int64_t kSkinnyRows = kBf16SkinnyRows;

// What both bf16 Panels types (gemm_loops.h) share: the problem, K in pairs, where a packed B
// sliver lies at the current panel's pairs, and the finish.
class Bf16PanelsBase {
 public:
  int nr() const { return NR; }
  int64_t k_steps() const { return kp_; }
  void begin_b_panel(int64_t, int64_t, int64_t p0, int64_t) {
    p0_ = p0;
    a_panels_ = 0;
  }
  void finish(int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
    finish_rows(g_, i0, rows, j0, cols);
  }

 protected:
  explicit Bf16PanelsBase(const Bf16Gemm& g) : g_(g), kp_(ceil_div(g.k, 2)) {}
  const uint32_t* b_sliver(int64_t j) const { return g_.b + (j / NR * kp_ + p0_) * NR; }
  float* c_at(const GemmTile& t) const { return g_.c + t.i * g_.ldc + t.j; }

  const Bf16Gemm& g_;
  const int64_t kp_;
  int64_t p0_ = 0;
  int64_t a_panels_ = 0;   // A panels packed since the B panel began (1: B not read before)
  float* tile_ = nullptr;  // an edge tile computed aside
};

// On VDPBF16PS: A converted to MR-row slivers of pairs per panel. Where the epilogue has a lane
// form (and C's columns are the output's last dim), each tile is finished in registers on its
// last K panel, so C is written once.
class Bf16Panels : public Bf16PanelsBase {
 public:
  // `widen`: the tiles of a CPU without AVX512_BF16 (gemm_bf16_tiles.h), on A packed as fp32,
  // two floats per K pair and row where VDPBF16PS takes one word.
  Bf16Panels(const Bf16Gemm& g, ThreadPool& pool, int tid, int64_t rows, bool widen)
      : Bf16PanelsBase(g), widen_(widen), pair_floats_(widen ? 2 : 1) {
    const GemmPanels b = panels();
    const int64_t kc_cap = std::min(b.kc, std::max<int64_t>(kp_, 1));
    // One A panel (the thread's rows fit MC) under several column blocks: packed once, whole K.
    keep_a_ = round_up(rows, MR) <= b.mc && g.n > b.nc;
    rows_cap_ = std::min(b.mc, round_up(rows, MR));
    ap_ = pool.scratch(tid, ThreadPool::kPackA,
                       static_cast<size_t>(rows_cap_ * pair_floats_ *
                                           (keep_a_ ? std::max<int64_t>(kp_, 1) : kc_cap)));
    tile_ = pool.scratch(tid, ThreadPool::kTile, MR * NR);
    tiles_finish_ = tiles_finish_in_registers(g.epilogue, g.n, &finish_.epilogue);
  }
  GemmPanels panels() const {
    return {round_up(std::max<int64_t>(1, g_.blocking.mc), MR),
            std::max<int64_t>(1, g_.blocking.kc / 2),
            std::max<int64_t>(1, g_.blocking.nc / NR) * NR};
  }
  int mr() const { return MR; }
  void pack_a(int64_t i0, int64_t rows, int64_t p0, int64_t kc) {
    ++a_panels_;
    a_ = keep_a_ ? ap_ + rows_cap_ * pair_floats_ * p0 : ap_;
    if (keep_a_ && p0 + kc <= packed_to_) return;  // packed under an earlier column block
    const int64_t k1 = std::min(g_.k, 2 * (p0 + kc));
    if (widen_) {
      widen_pack_a(g_, i0, rows, 2 * p0, k1, kc, a_);
    } else if (g_.im2col) {
      ConvRows src{g_.a, *g_.im2col, i0};
      cpu::pack_a(src, rows, 2 * p0, k1, kc, words(a_));
    } else {
      DenseRows src{g_.a + i0 * g_.lda, g_.lda};
      cpu::pack_a(src, rows, 2 * p0, k1, kc, words(a_));
    }
    if (keep_a_) packed_to_ = p0 + kc;
  }
  void tile(const GemmTile& t) {
    const float* a = a_ + t.ir * t.kc * pair_floats_;
    float* c = c_at(t);
    const bool finish = tiles_finish_ && t.last;
    if (t.cols == NR) {
      finish_.bias = g_.bias ? g_.bias + t.j : nullptr;
      finish_.col = t.j;
      run_tile(t, a, c, g_.ldc, t.accumulate, finish ? &finish_ : nullptr);
      return;
    }
    run_tile(t, a, tile_, NR, false, nullptr);
    store_tile_part(tile_, NR, c, g_.ldc, t.rows, t.cols, t.accumulate);
    if (finish) finish_rows(g_, t.i, t.rows, t.j, t.cols);
  }
  void finish(int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
    if (!tiles_finish_) finish_rows(g_, i0, rows, j0, cols);
  }

 private:
  static uint32_t* words(float* p) { return reinterpret_cast<uint32_t*>(p); }

  void run_tile(const GemmTile& t, const float* a, float* c, int64_t ldc, bool accumulate,
                const TileFinish* finish) const {
    if (widen_) {
      widen_tile(t.rows, t.kc, a, b_sliver(t.j), c, ldc, accumulate, finish, next_sliver(t));
    } else {
      micro_rows(t.rows, t.kc, reinterpret_cast<const uint32_t*>(a), b_sliver(t.j), c, ldc,
                 accumulate, finish, next_sliver(t));
    }
  }

  // The row tiles of a sliver share the fetch of the next sliver's panel, tile r its r-th part;
  // only under the B panel's first A panel (later ones find B in cache).
  NextSliver next_sliver(const GemmTile& t) const {
    if (!t.next_sliver || a_panels_ != 1) return {};
    const int64_t lines = ceil_div(t.kc * NR * static_cast<int64_t>(sizeof(uint32_t)), 64);
    const int64_t first = lines * t.row_tile / t.row_tiles;
    const int64_t last = lines * (t.row_tile + 1) / t.row_tiles;
    return {reinterpret_cast<const char*>(b_sliver(t.j + NR)) + 64 * first, last - first};
  }

  const bool widen_;
  const int64_t pair_floats_;  // A's floats per K pair and row: 1 (a bf16 pair word) or 2
  float* ap_ = nullptr;
  float* a_ = nullptr;  // the current A panel
  // Whether the packed A is kept for the whole K (see the constructor), its rows rounded up to
  // MR, and the K pairs packed so far.
  bool keep_a_ = false;
  int64_t rows_cap_ = 0, packed_to_ = 0;
  bool tiles_finish_ = false;
  TileFinish finish_;
};

// ---- AMX-BF16 path (rows > kSkinnyRows when cpu_has_amx_bf16()) ----
// Tiles: C 32 x 32 in tmm0..3 (two row halves x two column halves), A rows in tmm4/5 (16 rows x
// 32 bf16), B in tmm6/7 (16 K pairs x 16 columns): the packed sliver layout is exactly two B
// tiles side by side with a row stride of NR words. A is converted to row-major bf16 per panel.
constexpr int kAmxRows = 32;  // C rows per tile block
constexpr int kAmxK = 32;     // K elements per TDPBF16PS

// Rows [0, rows) x columns [k0, k0 + kc) of fp32 A -> row-major bf16 dst[rows_pad][kc_pad],
// zero-padded.
CUVIL_AMX_BF16_TARGET void convert_a_rowmajor(const float* a, int64_t lda, int64_t rows,
                                              int64_t rows_pad, int64_t k0, int64_t kc,
                                              int64_t kc_pad, uint16_t* dst) {
  for (int64_t r = 0; r < rows_pad; ++r) {
    uint16_t* d = dst + r * kc_pad;
    if (r >= rows) {
      std::fill(d, d + kc_pad, uint16_t{0});
      continue;
    }
    const float* src = a + r * lda + k0;
    int64_t p = 0;
    for (; p + 32 <= kc; p += 32) {
      const __m512bh v =
          _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + p + 16), _mm512_loadu_ps(src + p));
      _mm512_storeu_si512(d + p, reinterpret_cast<const __m512i&>(v));
    }
    for (; p < kc; ++p) d[p] = to_bf16(src[p]);
    for (; p < kc_pad; ++p) d[p] = 0;
  }
}

// One 32 x 32 block of C (+)= A[32, kc_pad] x B sliver over kc_pad / 32 steps.
CUVIL_AMX_BF16_TARGET void amx_block(const uint16_t* a, int64_t kc_pad, const uint32_t* b,
                                     int64_t steps, float* c, int64_t ldc, bool accumulate) {
  const int64_t cs = ldc * static_cast<int64_t>(sizeof(float));
  if (accumulate) {
    _tile_loadd(0, c, cs);
    _tile_loadd(1, c + 16, cs);
    _tile_loadd(2, c + 16 * ldc, cs);
    _tile_loadd(3, c + 16 * ldc + 16, cs);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const int64_t as = kc_pad * static_cast<int64_t>(sizeof(uint16_t));
  constexpr int64_t bs = NR * sizeof(uint32_t);
  for (int64_t t = 0; t < steps; ++t) {
    _tile_loadd(4, a + t * kAmxK, as);
    _tile_loadd(5, a + 16 * kc_pad + t * kAmxK, as);
    _tile_loadd(6, b + t * 16 * NR, bs);
    _tile_loadd(7, b + t * 16 * NR + 16, bs);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, cs);
  _tile_stored(1, c + 16, cs);
  _tile_stored(2, c + 16 * ldc, cs);
  _tile_stored(3, c + 16 * ldc + 16, cs);
}

// On AMX-BF16 tiles: each K panel a whole number of tile steps, A converted to row-major bf16.
class Bf16AmxPanels : public Bf16PanelsBase {
 public:
  Bf16AmxPanels(const Bf16Gemm& g, ThreadPool& pool, int tid, int64_t rows) : Bf16PanelsBase(g) {
    configure_amx_tiles();
    const GemmPanels b = panels();
    const int64_t rows_cap = std::min(b.mc, round_up(rows, kAmxRows));
    const int64_t kc_cap = std::min(2 * b.kc, round_up(std::max<int64_t>(g.k, 1), kAmxK));
    ap_ = reinterpret_cast<uint16_t*>(
        pool.scratch(tid, ThreadPool::kPackA, static_cast<size_t>(rows_cap * kc_cap / 2 + 16)));
    tile_ = pool.scratch(tid, ThreadPool::kTile, kAmxRows * NR);
  }
  GemmPanels panels() const {
    return {round_up(std::max<int64_t>(1, g_.blocking.mc), kAmxRows),
            round_up(std::max<int64_t>(kAmxK, g_.blocking.kc), kAmxK) / 2,
            std::max<int64_t>(1, g_.blocking.nc / NR) * NR};
  }
  int mr() const { return kAmxRows; }
  void pack_a(int64_t i0, int64_t rows, int64_t p0, int64_t kc) {
    const int64_t k0 = 2 * p0, len = std::min(2 * kc, g_.k - k0);
    kc_pad_ = round_up(std::max<int64_t>(len, 1), kAmxK);
    convert_a_rowmajor(g_.a + i0 * g_.lda, g_.lda, rows, round_up(rows, kAmxRows), k0, len, kc_pad_,
                       ap_);
  }
  void tile(const GemmTile& t) {
    const uint16_t* a = ap_ + t.ir * kc_pad_;
    float* c = c_at(t);
    if (t.rows == kAmxRows && t.cols == NR) {
      amx_block(a, kc_pad_, b_sliver(t.j), kc_pad_ / kAmxK, c, g_.ldc, t.accumulate);
      return;
    }
    // Edge block: through a 32 x 32 buffer holding the valid part of C.
    std::fill(tile_, tile_ + kAmxRows * NR, 0.0f);
    if (t.accumulate) {
      for (int64_t i = 0; i < t.rows; ++i)
        std::copy(c + i * g_.ldc, c + i * g_.ldc + t.cols, tile_ + i * NR);
    }
    amx_block(a, kc_pad_, b_sliver(t.j), kc_pad_ / kAmxK, tile_, NR, t.accumulate);
    store_tile_part(tile_, NR, c, g_.ldc, t.rows, t.cols, false);
  }

 private:
  uint16_t* ap_ = nullptr;
  int64_t kc_pad_ = kAmxK;
};

}  // namespace

int64_t bf16_packed_words(int64_t k, int64_t n) {
  // Plus one AMX step of K pairs: the last tile load of the last sliver may read past its pairs
  // (against zero A columns).
  return ceil_div(n, NR) * ceil_div(k, 2) * NR + kAmxK / 2 * NR;
}

void pack_b_bf16(const float* b, int64_t ldb, bool transposed, int64_t k, int64_t n, uint32_t* dst,
                 ThreadPool* pool) {
  const int64_t kp = ceil_div(k, 2);
  auto slivers = [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      uint32_t* d = dst + s * kp * NR;
      const int64_t j0 = s * NR;
      const int64_t nr = std::min<int64_t>(NR, n - j0);
      if (transposed) {
        for (int64_t j = 0; j < NR; ++j) {
          const float* src = b + (j0 + j) * ldb;
          for (int64_t p = 0; p < kp; ++p) {
            d[p * NR + j] =
                j < nr ? bf16_pair(src[2 * p], 2 * p + 1 < k ? src[2 * p + 1] : 0.0f) : 0u;
          }
        }
      } else {
        for (int64_t p = 0; p < kp; ++p) {
          const float* even = b + 2 * p * ldb + j0;
          const float* odd = 2 * p + 1 < k ? even + ldb : nullptr;
          for (int64_t j = 0; j < NR; ++j) {
            d[p * NR + j] = j < nr ? bf16_pair(even[j], odd ? odd[j] : 0.0f) : 0u;
          }
        }
      }
    }
  };
  const int64_t count = ceil_div(n, NR);
  std::fill(dst + count * kp * NR, dst + bf16_packed_words(k, n), 0u);
  if (pool) {
    pool->parallel_for(count, slivers);
  } else {
    slivers(0, count);
  }
}

void gemm_bf16(const Bf16Gemm& g, ThreadPool& pool) {
  // Each feature check reads CUVIL_CPU_DISABLE: one decides, per call.
  const bool widen = !cpu_has_avx512_bf16();
  CUVIL_CHECK(!widen || cpu_has_avx512(), "gemm_bf16 called on a CPU without avx512");
  if (g.m <= 0 || g.n <= 0) return;
  const int64_t slivers = ceil_div(g.n, NR);
  if (g.m <= kSkinnyRows) {
    CUVIL_CHECK(!g.im2col, "gemm_bf16: an in-place im2col A of few rows");
    if (widen) {
      pool.parallel_for(slivers, [&](int64_t s0, int64_t s1) { widen_skinny(g, s0, s1); });
      return;
    }
    const int64_t kp = ceil_div(g.k, 2);
    uint32_t* ap = reinterpret_cast<uint32_t*>(
        pool.scratch(pool.current_thread(), ThreadPool::kPackB, static_cast<size_t>(g.m * kp + 1)));
    convert_rows(g.a, g.lda, g.m, g.k, ap);
    pool.parallel_for(slivers, [&](int64_t s0, int64_t s1) { skinny_rows(g, ap, s0, s1); });
    return;
  }
  const bool amx = !widen && cpu_has_amx_bf16();
  CUVIL_CHECK(!g.im2col || !amx, "gemm_bf16: an in-place im2col A on the AMX path");
  const GemmSplit split = plan_gemm_split(pool.threads(), g.m, g.n, g.k, amx ? kAmxRows : MR, NR,
                                          g.blocking.partition, GemmBPacking::before);
  run_gemm_split(pool, split, g.m, g.n,
                 [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, int tid) {
                   if (amx) {
                     Bf16AmxPanels panels(g, pool, tid, i1 - i0);
                     gemm_loops(panels, i0, i1, j0, j1);
                   } else {
                     Bf16Panels panels(g, pool, tid, i1 - i0, widen);
                     gemm_loops(panels, i0, i1, j0, j1);
                   }
                 });
}

}  // namespace cuvil::runtime::cpu
