// conv2d.winograd_nhwc: 3x3 stride-1 convolution by Winograd's minimal filtering F(m x m, 3 x 3)
// (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016), m = 2 or 4
// (conv.winograd_tile), NHWC activations, groups 1, any padding and dilation (a dilated
// convolution is dh * dw undilated ones on its phases, WinogradShape). An m x m output tile is
// computed from an a x a input tile (a = m + 2) in a transformed domain where the 3x3 window
// becomes an elementwise product: a^2 independent GEMMs of [tiles x C] x [C x K] replace the direct
// sum, so the multiplies per output fall from 9 to a^2 / m^2 (4 at m = 2, 2.25 at m = 4) at the
// cost of the input and output transforms (adds, a few per channel per tile) and a little accuracy.
//
// The weights are transformed once (prepare hook, in double) into U[a^2][K block][C][block
// width]. Threads split the tiles (or output-channel blocks when there are few tiles, as the
// direct kernel splits rows). A thread takes a block of tiles (about conv.winograd_block_kib of V
// and M) and transforms their input into V[a^2][tiles][C] (padding is never materialised: taps
// outside the image read as zero); then, per block of 16 * conv.vectors output channels, runs one
// GEMM per element e of V[e] by U[e] (U[e]'s slice stays in L1 across the block's register tiles of
// MR tiles x NV vectors) into M[e][tiles][channels], and transforms each tile's a^2 products into
// its outputs (bias added in registers). The fused epilogue runs on the block's outputs while
// they are in cache.
//
// conv2d.winograd_bf16 is the same driver with V and U rounded to bf16 (pairs of input channels,
// fp32 accumulation by VDPBF16PS in conv_winograd_bf16.cc), always at m = 2.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "runtime/cpu/aligned_array.h"
#include "runtime/cpu/attrs.h"
#include "runtime/cpu/conv_kernels.h"
#include "runtime/cpu/conv_schedule.h"
#include "runtime/cpu/conv_schedule_attrs.h"
#include "runtime/cpu/conv_winograd_bf16.h"
#include "runtime/cpu/conv_winograd_nhwc_shared.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/quantize.h"
#include "runtime/cpu/register_tile.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int kAutoTile = 0;
// conv.winograd_tile = auto: F(4x4) when its tiling has at least this many tiles, else F(2x2).
// Each transformed weight is used once per tile (2 FLOPs), and F(4x4)'s weights are 4x the
// direct ones (F(2x2)'s 1.8x): with few tiles the GEMMs wait on the weights streaming from L3 or
// DRAM (about 6 FLOPs per byte on this machine). ResNet-50 b1 in place (cuvil-bench run --probes
// ops): 7x7 outputs (4 tiles) 1.14 ms at 4x4, 0.97 at 2x2, 1.10 direct; 14x14 (16 tiles) 0.57
// at 4x4, 0.61 at 2x2.
constexpr int64_t kMinTilesFor4x4 = 16;
// ... and when its transformed weights (36 x C x K floats) stay under this size: past it they
// stream from DRAM at every call whatever the tile, and F(2x2)'s are 2.25x smaller (SDXL's
// 1280-channel convolutions: 236 MB each at 4x4, 105 MB at 2x2, 59 MB direct). On a Sapphire
// Rapids VM (2 cores, 34 GB/s) ResNet-18 b1's 256-channel 14x14 layers (16 tiles, 9.4 MB at 4x4)
// took 1.49-1.53 ms at 4x4 and 1.02-1.07 at 2x2, its 128-channel 28x28 ones (2.4 MB) 0.63 at
// 4x4 and 0.70-0.72 at 2x2 (cuvil-bench run --probes ops, conv-tiling.winograd_tile); the AMD
// machine above had the 14x14 layers 7% faster at 4x4. The limit sits between the two sizes.
constexpr int64_t kMaxTransformedWeightBytesFor4x4 = int64_t{8} << 20;
// bf16 (conv2d.winograd_bf16) always uses F(2x2): F(4x4)'s transforms (coefficients up to 8 and
// 1/24) amplify the bf16 rounding of V and U to 0.5 relative error on the unit-test shapes;
// F(2x2) measured 3.2e-2.

// A block of tiles keeps its transformed input V (a^2 x C floats per tile) and the GEMMs' results
// (a^2 x block width per tile) in L2 while the weights stream through L1: conv.winograd_block_kib
// sizes blocks to about that many KiB (this machine's L2 is 1 MiB per core).
constexpr int64_t kDefaultBlockKib = 512;
// Auto partition: split output-channel blocks between threads when there are fewer tiles than
// this many per thread: few tiles share unevenly, and each thread would stream all the
// transformed weights for little work. ResNet-50 b1 layer4 in place (16 tiles of 2x2, 2 threads):
// 0.86-0.88 ms split by channels against 0.97-0.99 split by tiles; layer3 (16 tiles of 4x4) equal
// (one quiet pair of runs; conv.partition lets the tuner decide per machine).
constexpr int64_t kTilesPerThreadForTileSplit = 12;

}  // namespace

}  // namespace cuvil::runtime::cpu

namespace cuvil::runtime::cpu::winograd {

namespace {

// One vector of 16 channels for the transforms: a plain array the compiler vectorises as it can
// (the reference of the AVX-512 register in conv_winograd_nhwc_avx512.cc and the AVX2 pair in
// conv_winograd_nhwc_avx2.cc).
struct Vec {
  float l[kLanes];
};
inline Vec vzero() {
  return Vec{};
}
inline Vec vload(const float* p, uint16_t mask) {
  Vec v{};
  for (int i = 0; i < kLanes; ++i) v.l[i] = (mask >> i & 1u) ? p[i] : 0.0f;
  return v;
}
inline void vstore(float* p, Vec v) {
  std::memcpy(p, v.l, sizeof v.l);
}
inline void vstore(float* p, uint16_t mask, Vec v) {
  for (int i = 0; i < kLanes; ++i) {
    if (mask >> i & 1u) p[i] = v.l[i];
  }
}
inline Vec vadd(Vec a, Vec b) {
  for (int i = 0; i < kLanes; ++i) a.l[i] += b.l[i];
  return a;
}
inline Vec vsub(Vec a, Vec b) {
  for (int i = 0; i < kLanes; ++i) a.l[i] -= b.l[i];
  return a;
}
inline Vec vfma(float c, Vec x, Vec acc) {
  for (int i = 0; i < kLanes; ++i) acc.l[i] += c * x.l[i];
  return acc;
}

// V holds fp32, or bf16 for conv2d.winograd_bf16 (rounded to nearest even, as VCVTNEPS2BF16).
inline void store_v(float* p, Vec v) {
  vstore(p, v);
}
inline void store_v(uint16_t* p, Vec v) {
  for (int i = 0; i < kLanes; ++i) p[i] = to_bf16(v.l[i]);
}

// One of the a^2 GEMMs for MR tiles x NV vectors of output channels, over all C input channels:
// m[p][lanes] = sum_c v[p * v_stride + c] * u[c][lanes]. u rows are bw floats apart; results
// go to m with bw floats per tile.
using GemmFn = void (*)(const float* v, int64_t v_stride, int64_t c, const float* u, int64_t bw,
                        float* m);

template <int MR, int NV>
void gemm_tile(const float* v, int64_t v_stride, int64_t c, const float* u, int64_t bw, float* m) {
  float acc[MR][NV * kLanes] = {};
  for (int64_t ci = 0; ci < c; ++ci) {
    for (int p = 0; p < MR; ++p) {
      const float x = v[p * v_stride + ci];
      for (int l = 0; l < NV * kLanes; ++l) acc[p][l] += x * u[ci * bw + l];
    }
  }
  for (int p = 0; p < MR; ++p) std::memcpy(m + p * bw, acc[p], sizeof acc[p]);
}

struct Gemms {
  template <int MR, int NV>
  static constexpr GemmFn fn() {
    return &gemm_tile<MR, NV>;
  }
};

constexpr auto kGemms = register_tile_table<GemmFn, Gemms>();

GemmFn gemm_fn(int mr, int nv) {
  return kGemms[register_tile_index(mr, nv)];
}

}  // namespace

}  // namespace cuvil::runtime::cpu::winograd

#include "runtime/cpu/conv_winograd_nhwc_driver.h"

namespace cuvil::runtime::cpu {

namespace {

using winograd::channel_pairs;
using winograd::Winograd;
using winograd::WinogradShape;

// What the kernels run: 3x3, stride 1, groups 1 (any padding and dilation).
bool winograd_geometry(const ConvGeometry& g) {
  return g.groups == 1 && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1;
}

// The schedule, from the conv-tiling pass's step attributes.
struct WinogradSchedule {
  int tile = kAutoTile;        // conv.winograd_tile: m, outputs per tile side (2 or 4), 0 = auto
  int vectors = kAutoVectors;  // conv.vectors: output-channel vectors per register tile
  int64_t block_kib = kDefaultBlockKib;        // conv.winograd_block_kib: bytes of V + M per block
  ConvSplit partition = ConvSplit::automatic;  // conv.partition: rows (tiles) | channels | auto
  bool bf16 = false;                           // conv2d.winograd_bf16: always F(2x2, 3x3)
};

// The schedule of the f32 kernel, or (bf16) of conv2d.winograd_bf16.
WinogradSchedule winograd_schedule(const Step& s, bool bf16) {
  WinogradSchedule sc;
  sc.bf16 = bf16;
  const std::string where =
      conv_attr_where(s, bf16 ? "conv2d.winograd_bf16" : "conv2d.winograd_nhwc");
  const int64_t tile = s.attrs.get_int(attrs::kConvWinogradTile, kAutoTile);
  if (tile != kAutoTile && tile != 2 && tile != 4) {
    throw UserError("conv.winograd_tile: expected 0 (auto), 2 or 4, got " + std::to_string(tile) +
                    where);
  }
  sc.tile = static_cast<int>(tile);
  sc.vectors = conv_vectors_attr(s, where);
  sc.block_kib = s.attrs.get_int(attrs::kConvWinogradBlockKib, kDefaultBlockKib);
  if (sc.block_kib < 1) {
    throw UserError("conv.winograd_block_kib: expected >= 1, got " + std::to_string(sc.block_kib) +
                    where);
  }
  sc.partition = conv_partition_attr(s, where);
  return sc;
}

WinogradShape winograd_shape(const ConvGeometry& g, const WinogradSchedule& sc) {
  WinogradShape d;
  const int64_t ph = (g.oh + g.dh - 1) / g.dh, pw = (g.ow + g.dw - 1) / g.dw;  // a phase's grid
  auto tiles_at = [&](int64_t m) {
    return g.n * g.dh * g.dw * ((ph + m - 1) / m) * ((pw + m - 1) / m);
  };
  const bool four = tiles_at(4) >= kMinTilesFor4x4 &&
                    36 * g.c * g.o * int64_t{sizeof(float)} <= kMaxTransformedWeightBytesFor4x4;
  d.m = sc.bf16 ? 2 : sc.tile != kAutoTile ? sc.tile : four ? 4 : 2;
  d.alpha = d.m + 2;
  const int vectors = sc.vectors != kAutoVectors ? sc.vectors : kMaxNV;
  d.nv = static_cast<int>(std::clamp<int64_t>((g.o + kLanes - 1) / kLanes, 1, vectors));
  d.bw = int64_t{d.nv} * kLanes;
  d.blocks = (g.o + d.bw - 1) / d.bw;
  d.mr = max_mr(d.nv);
  d.cp = (g.c + kLanes - 1) / kLanes * kLanes;
  d.th = (ph + d.m - 1) / d.m;
  d.tw = (pw + d.m - 1) / d.m;
  d.tiles = g.n * g.dh * g.dw * d.th * d.tw;
  // Whole register groups of tiles, at least one.
  const int64_t tile_bytes = int64_t{d.alpha} * d.alpha * (d.cp + d.bw) * int64_t{sizeof(float)};
  d.tiles_per_block = std::max<int64_t>(d.mr, (sc.block_kib << 10) / tile_bytes / d.mr * d.mr);
  d.tiles_per_block = std::min(d.tiles_per_block, d.tiles);
  return d;
}

int64_t transformed_floats(const ConvGeometry& g, const WinogradShape& d) {
  return int64_t{d.alpha} * d.alpha * d.blocks * g.c * d.bw;
}

// w[K, C, 3, 3] -> U[e][block][c][bw] = (G g G^T)[e], computed in double; zero past K. Walked
// by (block, c) so that each of the a^2 output rows is written contiguously.
template <int M>
void transform_weights(const ConvGeometry& g, const WinogradShape& d, const float* w, float* u) {
  using W = Winograd<M>;
  constexpr int A = W::kAlpha;
  const int64_t e_stride = d.blocks * g.c * d.bw;
  for (int64_t block = 0; block < d.blocks; ++block) {
    for (int64_t c = 0; c < g.c; ++c) {
      float* row = u + (block * g.c + c) * d.bw;
      for (int64_t lane = 0; lane < d.bw; ++lane) {
        const int64_t k = block * d.bw + lane;
        if (k >= g.o) {
          for (int e = 0; e < A * A; ++e) row[e * e_stride + lane] = 0.0f;
          continue;
        }
        const float* gk = w + (k * g.c + c) * 9;
        double t[A][3];  // G g
        for (int i = 0; i < A; ++i) {
          for (int b = 0; b < 3; ++b) {
            t[i][b] = W::G[i][0] * gk[b] + W::G[i][1] * gk[3 + b] + W::G[i][2] * gk[6 + b];
          }
        }
        for (int i = 0; i < A; ++i) {
          for (int j = 0; j < A; ++j) {
            const double v = t[i][0] * W::G[j][0] + t[i][1] * W::G[j][1] + t[i][2] * W::G[j][2];
            row[(i * A + j) * e_stride + lane] = static_cast<float>(v);
          }
        }
      }
    }
  }
}

void transform_weights(const ConvGeometry& g, const WinogradShape& d, const float* w, float* u) {
  if (d.m == 2) {
    transform_weights<2>(g, d, w, u);
  } else {
    transform_weights<4>(g, d, w, u);
  }
}

// conv2d.winograd_bf16: U as bf16 pairs of input channels, [e][block][C/2][bw][2] (the unit
// VDPBF16PS multiplies), zero past C.
int64_t transformed_bf16_values(const ConvGeometry& g, const WinogradShape& d) {
  return int64_t{d.alpha} * d.alpha * d.blocks * channel_pairs(g) * d.bw * 2;
}

void to_bf16_pairs(const ConvGeometry& g, const WinogradShape& d, const float* u, uint16_t* out) {
  const int64_t pairs = channel_pairs(g);
  for (int64_t eb = 0; eb < int64_t{d.alpha} * d.alpha * d.blocks; ++eb) {
    for (int64_t c2 = 0; c2 < pairs; ++c2) {
      for (int64_t lane = 0; lane < d.bw; ++lane) {
        for (int64_t half = 0; half < 2; ++half) {
          const int64_t c = 2 * c2 + half;
          out[((eb * pairs + c2) * d.bw + lane) * 2 + half] =
              c < g.c ? to_bf16(u[(eb * g.c + c) * d.bw + lane]) : uint16_t{0};
        }
      }
    }
  }
}

struct PreparedWinograd {
  AlignedArray<float> u;          // conv2d.winograd_nhwc
  AlignedArray<uint16_t> u_bf16;  // conv2d.winograd_bf16
};

WinogradConvPlan resolve(const WinogradSchedule& sc, const WinogradShape& d, int threads) {
  WinogradConvPlan p;
  p.tile = d.m;
  p.vectors = d.nv;
  p.tiles_per_group = d.mr;
  p.tiles_per_block = d.tiles_per_block;
  const bool split_channels =
      sc.partition == ConvSplit::channels ||
      (sc.partition == ConvSplit::automatic && d.tiles < kTilesPerThreadForTileSplit * threads);
  p.thread_parts = split_channels ? std::clamp<int64_t>(threads, 1, d.blocks) : 1;
  return p;
}

}  // namespace

KernelIsa conv2d_winograd_nhwc_isa() {
  return kernel_isa();
}

WinogradConvPlan conv2d_winograd_plan(const Step& step, int threads) {
  const ConvGeometry g = conv_geometry(step);
  const WinogradSchedule sc = winograd_schedule(step, step.kernel == "conv2d.winograd_bf16");
  return resolve(sc, winograd_shape(g, sc), threads);
}

ir::Attrs conv2d_winograd_pin(const Step& step, int threads) {
  const WinogradConvPlan p = conv2d_winograd_plan(step, threads);
  return {{attrs::kConvWinogradTile, int64_t{p.tile}},
          {attrs::kConvPartition, std::string(p.thread_parts > 1 ? "channels" : "rows")}};
}

namespace {

std::shared_ptr<const void> schedule_winograd(const Step& s, bool bf16) {
  auto schedule = std::make_shared<ConvSchedule>();
  schedule->geometry = conv_geometry(s);
  schedule->tiling = std::make_shared<WinogradSchedule>(winograd_schedule(s, bf16));
  return schedule;
}

}  // namespace

std::shared_ptr<const void> conv2d_winograd_schedule(const Step& s) {
  return schedule_winograd(s, false);
}

std::shared_ptr<const void> conv2d_winograd_bf16_schedule(const Step& s) {
  return schedule_winograd(s, true);
}

bool conv2d_winograd_supports(const Step& s) {
  return is_nhwc(s) && winograd_geometry(conv_geometry(s));
}

namespace {

std::shared_ptr<const void> prepare_winograd(const Step& s, const float* const* constants,
                                             bool bf16) {
  if (!constants[1]) return nullptr;  // weights computed at run time: transformed per call
  // The schedule hook ran first (KernelInfo::schedule): its geometry and tiling.
  const ConvGeometry& g = scheduled_geometry(s);
  const WinogradSchedule& sc = scheduled_tiling<WinogradSchedule>(s);
  CUVIL_CHECK(sc.bf16 == bf16,
              "conv2d.winograd step " + s.node_name + " was scheduled for the other precision");
  auto prepared = std::make_shared<PreparedWinograd>();
  const WinogradShape d = winograd_shape(g, sc);
  prepared->u = AlignedArray<float>(transformed_floats(g, d));
  transform_weights(g, d, constants[1], prepared->u.data());
  if (bf16) {
    prepared->u_bf16 = AlignedArray<uint16_t>(transformed_bf16_values(g, d));
    to_bf16_pairs(g, d, prepared->u.data(), prepared->u_bf16.data());
    prepared->u = {};
  }
  return prepared;
}

template <class T>
void run_with(const KernelArgs& a, const ConvGeometry& g, const WinogradShape& d,
              const WinogradConvPlan& plan, const T* u) {
  const KernelIsa isa = conv2d_winograd_nhwc_isa();
  if (isa == KernelIsa::avx512) {
    winograd::run_avx512(a, g, d, plan, u);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (isa == KernelIsa::avx2) {
      winograd::run_avx2(a, g, d, plan, u);
      return;
    }
  }
  winograd::run_with(a, g, d, plan, u);
}

void run_winograd_step(const KernelArgs& a, bool bf16) {
  const ConvGeometry& g = scheduled_geometry(a.step);
  CUVIL_CHECK(g.nhwc && winograd_geometry(g),
              "conv2d.winograd on an unsupported step " + a.step.node_name);
  const auto* prepared = static_cast<const PreparedWinograd*>(a.step.prepared.get());
  const WinogradSchedule& sc = scheduled_tiling<WinogradSchedule>(a.step);
  const WinogradShape d = winograd_shape(g, sc);
  const WinogradConvPlan plan = resolve(sc, d, a.pool.threads());
  const float* u = prepared ? prepared->u.data() : nullptr;
  if (!prepared) {
    float* buf =
        a.pool.scratch(0, ThreadPool::kTile, static_cast<size_t>(transformed_floats(g, d)));
    transform_weights(g, d, a.in[1], buf);
    u = buf;
  }
  if (!bf16) {
    run_with(a, g, d, plan, u);
    return;
  }
  const uint16_t* u16 = prepared ? prepared->u_bf16.data() : nullptr;
  if (!prepared) {
    auto* buf = reinterpret_cast<uint16_t*>(a.pool.scratch(
        0, ThreadPool::kPackB, static_cast<size_t>(transformed_bf16_values(g, d) / 2 + 1)));
    to_bf16_pairs(g, d, u, buf);
    u16 = buf;
  }
  run_with(a, g, d, plan, u16);
}

}  // namespace

std::shared_ptr<const void> conv2d_winograd_prepare(const Step& s, const float* const* constants) {
  return prepare_winograd(s, constants, false);
}

void conv2d_winograd_nhwc(const KernelArgs& a) {
  run_winograd_step(a, false);
}

bool conv2d_winograd_bf16_supports(const Step& s) {
  return cpu_has_avx512_bf16() && conv2d_winograd_supports(s);
}

std::shared_ptr<const void> conv2d_winograd_bf16_prepare(const Step& s,
                                                         const float* const* constants) {
  return prepare_winograd(s, constants, true);
}

void conv2d_winograd_bf16(const KernelArgs& a) {
  CUVIL_CHECK(cpu_has_avx512_bf16(), "conv2d.winograd_bf16 without avx512_bf16");
  run_winograd_step(a, true);
}

}  // namespace cuvil::runtime::cpu
