#include "runtime/cpu/gemm_int8.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
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
// The products are compiled for AVX512_VNNI (or AMX) whatever -march says; they run only after
// cpu_has_avx512_vnni() (cpu_has_amx_int8()).
#include "runtime/cpu/target_attributes.h"

// The sliver transpose and the tile's store with its finish in registers, compiled for AVX-512
// (inlined into the VNNI code only).
#include "runtime/cpu/target_avx512_begin.h"

#include "runtime/cpu/elementwise_math_avx512.h"
#include "runtime/cpu/epilogue_lanes_avx512.h"
#include "runtime/cpu/gemm_tile_store_avx512.h"
#include "runtime/cpu/transpose_avx512.h"

#include "runtime/cpu/target_end.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int MR = kInt8MR;
constexpr int NR = kInt8NR;
static_assert(NR == 32, "a sliver row of K quads is two 16-lane vectors");

inline uint32_t load_quad(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// Per-call column data: fp32 scale sa * sw[j] and the int32 compensation za * colsum[j].
struct Columns {
  const float* scale;
  const int32_t* comp;
};

// acc += u8 quads of a x s8 quads of b (VPDPBUSD), with the accumulator tied to its register:
// through the intrinsic, GCC kept a copy of every accumulator on the stack each K step when the
// tile was not inlined into its caller (the portable build), and the tile ran at half speed.
CUVIL_VNNI_TARGET __attribute__((always_inline)) inline void dpbusd(__m512i& acc, __m512i a,
                                                                    __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}

// C[MR, NR] = dequant(A-sliver x B-sliver over kq K quads).
CUVIL_VNNI_TARGET void micro(int64_t kq, const uint32_t* a, const uint32_t* b, float* c,
                             int64_t ldc, const float* cs, const int32_t* comp) {
  __m512i c0[MR], c1[MR];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = _mm512_setzero_si512();
  for (int64_t p = 0; p < kq; ++p) {
    const __m512i b0 = _mm512_loadu_si512(b);
    const __m512i b1 = _mm512_loadu_si512(b + 16);
    _mm_prefetch(reinterpret_cast<const char*>(b + 8 * NR), _MM_HINT_T0);
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const __m512i ai = _mm512_set1_epi32(static_cast<int>(a[i]));
      dpbusd(c0[i], ai, b0);
      dpbusd(c1[i], ai, b1);
    }
    a += MR;
    b += NR;
  }
  const __m512 s0 = _mm512_loadu_ps(cs), s1 = _mm512_loadu_ps(cs + 16);
  const __m512i z0 = _mm512_loadu_si512(comp), z1 = _mm512_loadu_si512(comp + 16);
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    float* row = c + i * ldc;
    _mm512_storeu_ps(row, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(c0[i], z0)), s0));
    _mm512_storeu_ps(row + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(c1[i], z1)), s1));
  }
}

// A full tile just stored by micro (still in L1) finished in place: bias and the epilogue's lane
// form in registers. Not in micro itself: inlined there it made GCC spill the K loop's
// accumulators (2x slower) while micro used the VPDPBUSD intrinsic; with the tied dpbusd it does
// not, but measured no faster (ResNet-50 b1 int8 14.5-15.1 ms against 14.4-14.7 this way).
CUVIL_VNNI_TARGET void finish_tile(float* c, int64_t ldc, const avx512::TileFinish& finish) {
  __m512 acc[MR][2];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    acc[i][0] = _mm512_loadu_ps(c + i * ldc);
    acc[i][1] = _mm512_loadu_ps(c + i * ldc + 16);
  }
  avx512::store_tile<MR>(acc, c, ldc, false, &finish);
}

// Rows [0, rows) of u8 A into MR-row slivers of K quads: dst[sliver][p][i], zero-padded rows.
// 16 quads of MR rows at a time, loaded as rows and transposed in registers.
CUVIL_VNNI_TARGET void pack_a(const uint8_t* a, int64_t lda, int64_t rows, int64_t kq,
                              uint32_t* dst) {
  static_assert(MR <= 16, "a sliver's rows are lanes of one vector");
  constexpr __mmask16 kRows = static_cast<__mmask16>((1u << MR) - 1u);
  for (int64_t r0 = 0; r0 < rows; r0 += MR) {
    const int64_t mr = std::min<int64_t>(MR, rows - r0);
    uint32_t* d = dst + r0 * kq;
    for (int64_t p0 = 0; p0 < kq; p0 += 16) {
      const int64_t quads = std::min<int64_t>(16, kq - p0);
      const __mmask64 bytes = quads == 16 ? ~__mmask64{0} : (__mmask64{1} << (4 * quads)) - 1;
      __m512i r[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) {
        r[i] = i < mr ? _mm512_maskz_loadu_epi8(bytes, a + (r0 + i) * lda + 4 * p0)
                      : _mm512_setzero_si512();
      }
      avx512::transpose16x16_epi32(r);
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c) {
        if (c < quads) _mm512_mask_storeu_epi32(d + (p0 + c) * MR, kRows, r[c]);
      }
    }
  }
}

// Few rows: stream each packed sliver once; two accumulator sets per row.
template <int M>
CUVIL_VNNI_TARGET void skinny(const Int8Gemm& g, const Columns& cols, int64_t s0, int64_t s1) {
  const int64_t kq = ceil_div(g.b->k, 4);
  for (int64_t s = s0; s < s1; ++s) {
    const uint32_t* b = g.b->words.data() + s * kq * NR;
    __m512i acc[M][4];
#pragma GCC unroll 4
    for (int m = 0; m < M; ++m) {
      acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = _mm512_setzero_si512();
    }
    int64_t p = 0;
    for (; p + 2 <= kq; p += 2) {
      const __m512i b0 = _mm512_loadu_si512(b + p * NR);
      const __m512i b1 = _mm512_loadu_si512(b + p * NR + 16);
      const __m512i b2 = _mm512_loadu_si512(b + p * NR + 32);
      const __m512i b3 = _mm512_loadu_si512(b + p * NR + 48);
#pragma GCC unroll 4
      for (int m = 0; m < M; ++m) {
        const uint8_t* a = g.a + m * g.lda + 4 * p;
        const __m512i a0 = _mm512_set1_epi32(static_cast<int>(load_quad(a)));
        const __m512i a1 = _mm512_set1_epi32(static_cast<int>(load_quad(a + 4)));
        dpbusd(acc[m][0], a0, b0);
        dpbusd(acc[m][1], a0, b1);
        dpbusd(acc[m][2], a1, b2);
        dpbusd(acc[m][3], a1, b3);
      }
    }
    for (; p < kq; ++p) {
      const __m512i b0 = _mm512_loadu_si512(b + p * NR);
      const __m512i b1 = _mm512_loadu_si512(b + p * NR + 16);
#pragma GCC unroll 4
      for (int m = 0; m < M; ++m) {
        const __m512i a0 = _mm512_set1_epi32(static_cast<int>(load_quad(g.a + m * g.lda + 4 * p)));
        dpbusd(acc[m][0], a0, b0);
        dpbusd(acc[m][1], a0, b1);
      }
    }
    const int64_t j0 = s * NR;
    const int64_t nr = std::min<int64_t>(NR, g.b->n - j0);
    const __m512 sc0 = _mm512_loadu_ps(cols.scale + j0),
                 sc1 = _mm512_loadu_ps(cols.scale + j0 + 16);
    const __m512i z0 = _mm512_loadu_si512(cols.comp + j0);
    const __m512i z1 = _mm512_loadu_si512(cols.comp + j0 + 16);
#pragma GCC unroll 4
    for (int m = 0; m < M; ++m) {
      alignas(64) float out[NR];
      const __m512i t0 = _mm512_sub_epi32(_mm512_add_epi32(acc[m][0], acc[m][2]), z0);
      const __m512i t1 = _mm512_sub_epi32(_mm512_add_epi32(acc[m][1], acc[m][3]), z1);
      _mm512_store_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(t0), sc0));
      _mm512_store_ps(out + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(t1), sc1));
      float* row = g.c + m * g.ldc + j0;
      std::copy(out, out + nr, row);
      finish_row(g, row, j0, nr);
    }
  }
}

void skinny_rows(const Int8Gemm& g, const Columns& cols, int64_t s0, int64_t s1) {
  switch (g.m) {
    case 1:
      return skinny<1>(g, cols, s0, s1);
    case 2:
      return skinny<2>(g, cols, s0, s1);
    case 3:
      return skinny<3>(g, cols, s0, s1);
    default:
      return skinny<4>(g, cols, s0, s1);
  }
}

constexpr int64_t kSkinnyRows = kInt8SkinnyRows;

// What both int8 Panels types (gemm_loops.h) share: the problem and its per-call column data,
// K in quads and in one piece (each tile dequantises its exact int32 sums), every column of a
// thread's part in one block, where a packed B sliver lies, and the finish.
class Int8PanelsBase {
 public:
  int nr() const { return NR; }
  int64_t k_steps() const { return kq_; }
  void begin_b_panel(int64_t, int64_t, int64_t, int64_t) {}
  void finish(int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
    finish_rows(g_, i0, rows, j0, cols);
  }

 protected:
  Int8PanelsBase(const Int8Gemm& g, const Columns& cols)
      : g_(g), cols_(cols), kq_(ceil_div(g.b->k, 4)) {}
  // Panels for a register tile of `mr` rows.
  GemmPanels panels_of(int mr) const {
    return {round_up(std::max<int64_t>(1, g_.mc), mr), std::max<int64_t>(1, kq_),
            round_up(std::max<int64_t>(g_.b->n, 1), NR)};
  }
  const uint32_t* b_sliver(int64_t j) const { return g_.b->words.data() + j / NR * kq_ * NR; }
  float* c_at(const GemmTile& t) const { return g_.c + t.i * g_.ldc + t.j; }

  const Int8Gemm& g_;
  const Columns& cols_;
  const int64_t kq_;
};

// On VPDPBUSD: A packed in MR-row slivers of quads. Where the epilogue has a lane form (and C's
// columns are the output's last dim), each full tile is finished in registers right after its
// store, while it is in L1; edge tiles after theirs.
class Int8Panels : public Int8PanelsBase {
 public:
  Int8Panels(const Int8Gemm& g, const Columns& cols, ThreadPool& pool, int tid, int64_t rows)
      : Int8PanelsBase(g, cols) {
    ap_ = reinterpret_cast<uint32_t*>(
        pool.scratch(tid, ThreadPool::kPackA,
                     static_cast<size_t>(std::min(panels().mc, round_up(rows, MR)) * kq_ + 1)));
    tile_ = pool.scratch(tid, ThreadPool::kTile, MR * NR);
    tiles_finish_ = tiles_finish_in_registers(g.epilogue, g.b->n, &finish_.epilogue);
  }
  GemmPanels panels() const { return panels_of(MR); }
  int mr() const { return MR; }
  void pack_a(int64_t i0, int64_t rows, int64_t, int64_t) {
    cpu::pack_a(g_.a + i0 * g_.lda, g_.lda, rows, kq_, ap_);
  }
  void tile(const GemmTile& t) {
    const uint32_t* a = ap_ + t.ir * kq_;
    if (t.rows == MR && t.cols == NR) {
      micro(kq_, a, b_sliver(t.j), c_at(t), g_.ldc, cols_.scale + t.j, cols_.comp + t.j);
      if (tiles_finish_ && (g_.bias || finish_.epilogue)) {
        finish_.bias = g_.bias ? g_.bias + t.j : nullptr;
        finish_.col = t.j;
        finish_tile(c_at(t), g_.ldc, finish_);
      }
      return;
    }
    micro(kq_, a, b_sliver(t.j), tile_, NR, cols_.scale + t.j, cols_.comp + t.j);
    store_tile_part(tile_, NR, c_at(t), g_.ldc, t.rows, t.cols, false);
    if (tiles_finish_) finish_rows(g_, t.i, t.rows, t.j, t.cols);
  }
  void finish(int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
    if (!tiles_finish_) finish_rows(g_, i0, rows, j0, cols);
  }

 private:
  uint32_t* ap_ = nullptr;
  float* tile_ = nullptr;
  bool tiles_finish_ = false;
  avx512::TileFinish finish_;
};

// ---- AMX-INT8 path (rows > kSkinnyRows when cpu_has_amx_int8()) ----
// Tiles: C 32 x 32 int32 in tmm0..3 (two row halves x two column halves), A rows in tmm4/5 (16
// rows x 64 u8), B in tmm6/7 (16 K quads x 16 columns): the packed sliver layout is two B tiles
// side by side with a row stride of NR words, so the same packed weights serve both paths. A is
// copied to row-major u8 per panel, K zero-padded to whole tile steps: zeros of A meet whatever
// B holds past its K (the next sliver, or the allocation's tail) and add nothing.
constexpr int kAmxRows = 32;  // C rows per tile block
constexpr int kAmxK = 64;     // K elements per TDPBUSD

// Rows [0, rows) of u8 A -> row-major dst[rows_pad][k_pad], zero-padded.
void pack_a_rowmajor(const uint8_t* a, int64_t lda, int64_t rows, int64_t rows_pad, int64_t k,
                     int64_t k_pad, uint8_t* dst) {
  for (int64_t r = 0; r < rows_pad; ++r) {
    uint8_t* d = dst + r * k_pad;
    const int64_t copied = r < rows ? k : 0;
    if (copied > 0) std::memcpy(d, a + r * lda, static_cast<size_t>(copied));
    std::memset(d + copied, 0, static_cast<size_t>(k_pad - copied));
  }
}

// acc[32][32] = A[32, k_pad] x B sliver over k_pad / 64 steps.
CUVIL_AMX_INT8_TARGET void amx_block(const uint8_t* a, int64_t k_pad, const uint32_t* b,
                                     int32_t* acc) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  constexpr int64_t bs = NR * sizeof(uint32_t), cs = NR * sizeof(int32_t);
  for (int64_t t = 0; t < k_pad / kAmxK; ++t) {
    _tile_loadd(4, a + t * kAmxK, k_pad);
    _tile_loadd(5, a + 16 * k_pad + t * kAmxK, k_pad);
    _tile_loadd(6, b + t * 16 * NR, bs);
    _tile_loadd(7, b + t * 16 * NR + 16, bs);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  _tile_stored(0, acc, cs);
  _tile_stored(1, acc + 16, cs);
  _tile_stored(2, acc + 16 * NR, cs);
  _tile_stored(3, acc + 16 * NR + 16, cs);
}

// rows x nr of C = (acc - comp) * scale, the int32 sums of a tile block dequantised.
CUVIL_AMX_INT8_TARGET void dequantize_block(const int32_t* acc, int64_t rows, int64_t nr,
                                            const float* scale, const int32_t* comp, float* c,
                                            int64_t ldc) {
  const __mmask16 m0 = nr >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << nr) - 1);
  const __mmask16 m1 = nr <= 16   ? 0
                       : nr >= 32 ? 0xFFFF
                                  : static_cast<__mmask16>((1u << (nr - 16)) - 1);
  const __m512 s0 = _mm512_loadu_ps(scale), s1 = _mm512_loadu_ps(scale + 16);
  const __m512i z0 = _mm512_loadu_si512(comp), z1 = _mm512_loadu_si512(comp + 16);
  for (int64_t i = 0; i < rows; ++i) {
    const __m512i a0 = _mm512_loadu_si512(acc + i * NR), a1 = _mm512_loadu_si512(acc + i * NR + 16);
    float* row = c + i * ldc;
    _mm512_mask_storeu_ps(row, m0, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(a0, z0)), s0));
    _mm512_mask_storeu_ps(row + 16, m1,
                          _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(a1, z1)), s1));
  }
}

// On AMX-INT8 tiles: A copied to row-major u8, K zero-padded to whole tile steps; each 32 x 32
// block's int32 sums dequantised as they leave the tiles.
class Int8AmxPanels : public Int8PanelsBase {
 public:
  Int8AmxPanels(const Int8Gemm& g, const Columns& cols, ThreadPool& pool, int tid, int64_t rows)
      : Int8PanelsBase(g, cols), k_pad_(round_up(std::max<int64_t>(g.b->k, 1), kAmxK)) {
    configure_amx_tiles();
    const int64_t rows_cap = std::min(panels().mc, round_up(rows, kAmxRows));
    ap_ = reinterpret_cast<uint8_t*>(
        pool.scratch(tid, ThreadPool::kPackA, static_cast<size_t>(rows_cap * k_pad_ / 4 + 16)));
    acc_ = reinterpret_cast<int32_t*>(pool.scratch(tid, ThreadPool::kTile, kAmxRows * NR));
  }
  GemmPanels panels() const { return panels_of(kAmxRows); }
  int mr() const { return kAmxRows; }
  void pack_a(int64_t i0, int64_t rows, int64_t, int64_t) {
    pack_a_rowmajor(g_.a + i0 * g_.lda, g_.lda, rows, round_up(rows, kAmxRows), g_.b->k, k_pad_,
                    ap_);
  }
  void tile(const GemmTile& t) {
    amx_block(ap_ + t.ir * k_pad_, k_pad_, b_sliver(t.j), acc_);
    dequantize_block(acc_, t.rows, t.cols, cols_.scale + t.j, cols_.comp + t.j, c_at(t), g_.ldc);
  }

 private:
  const int64_t k_pad_;
  uint8_t* ap_ = nullptr;
  int32_t* acc_ = nullptr;
};

}  // namespace

std::shared_ptr<Int8PackedWeights> quantize_pack_int8(const float* bt, int64_t n, int64_t k,
                                                      int64_t ld) {
  auto w = std::make_shared<Int8PackedWeights>();
  w->k = k;
  w->n = n;
  const int64_t kq = ceil_div(k, 4);
  const int64_t slivers = ceil_div(n, NR);
  // A tile step past the last sliver's K reads up to one step (16 quads) beyond it.
  w->words = AlignedArray<uint32_t>(slivers * kq * NR + 16 * NR);
  w->scale = AlignedArray<float>(slivers * NR);
  w->colsum = AlignedArray<int32_t>(slivers * NR);
  std::vector<int8_t> q(static_cast<size_t>(std::max<int64_t>(k, 1)));
  for (int64_t j = 0; j < n; ++j) {
    quantize_rows_s8(bt + j * ld, 1, k, ld, q.data(), w->scale.data() + j);
    int32_t sum = 0;
    for (int64_t p = 0; p < k; ++p) sum += q[static_cast<size_t>(p)];
    w->colsum.data()[j] = sum;
    uint32_t* d = w->words.data() + (j / NR) * kq * NR + j % NR;
    for (int64_t p = 0; p < kq; ++p) {
      uint32_t word = 0;
      for (int64_t l = 0; l < 4 && 4 * p + l < k; ++l) {
        word |= static_cast<uint32_t>(static_cast<uint8_t>(q[static_cast<size_t>(4 * p + l)]))
                << (8 * l);
      }
      d[p * NR] = word;
    }
  }
  return w;
}

void gemm_int8(const Int8Gemm& g, ThreadPool& pool) {
  CUVIL_CHECK(cpu_has_avx512_vnni(), "gemm_int8 called on a CPU without avx512_vnni");
  CUVIL_CHECK(g.b != nullptr, "gemm_int8 without packed weights");
  const int64_t n = g.b->n;
  if (g.m <= 0 || n <= 0) return;
  const int64_t slivers = ceil_div(n, NR);
  const int64_t padded = slivers * NR;
  // Per-call column data on the calling thread's scratch (its pack-B slot is unused here).
  float* scratch =
      pool.scratch(pool.current_thread(), ThreadPool::kPackB, static_cast<size_t>(2 * padded));
  float* scale = scratch;
  int32_t* comp = reinterpret_cast<int32_t*>(scratch + padded);
  for (int64_t j = 0; j < padded; ++j) {
    scale[j] = g.aq.scale * g.b->scale.data()[j];
    comp[j] = g.aq.zero_point * g.b->colsum.data()[j];
  }
  const Columns cols{scale, comp};
  if (g.m <= kSkinnyRows) {
    pool.parallel_for(slivers, [&](int64_t s0, int64_t s1) { skinny_rows(g, cols, s0, s1); });
    return;
  }
  const bool amx = cpu_has_amx_int8();
  const GemmSplit split =
      plan_gemm_split(pool.threads(), g.m, n, g.b->k, amx ? kAmxRows : MR, NR, g.partition);
  run_gemm_split(pool, split, g.m, n, [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, int tid) {
    if (amx) {
      Int8AmxPanels panels(g, cols, pool, tid, i1 - i0);
      gemm_loops(panels, i0, i1, j0, j1);
    } else {
      Int8Panels panels(g, cols, pool, tid, i1 - i0);
      gemm_loops(panels, i0, i1, j0, j1);
    }
  });
}

}  // namespace cuvil::runtime::cpu
