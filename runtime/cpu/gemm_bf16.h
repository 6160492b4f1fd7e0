// bf16 GEMM with fp32 accumulation on AVX512_BF16 (VDPBF16PS): C = A * B (+ bias), then the
// step's epilogue. B is packed once (for weights: at lowering, in KernelInfo::prepare) into
// NR-column slivers of K pairs, the layout VDPBF16PS multiplies: word [s][p][j] holds
// (B[2p][32s + j], B[2p+1][32s + j]) as two bf16. A stays fp32 in memory and is converted to
// bf16 pairs while it is packed per panel (transposed in registers). The register tiles add the
// bias and apply an epilogue with a lane form (Epilogue::lanes()) before they store. Products with
// few rows (decode) stream the packed bf16 B once, half the bytes of fp32. Where the CPU has
// AMX-BF16 (cpu_has_amx_bf16), larger products run on tiles (TDPBF16PS) instead: the sliver layout
// is two B tiles side by side, so the same packed weights serve both; measured: VDPBF16PS alone is
// slower than fp32 FMA on the Sapphire Rapids this was built on, AMX several times faster. On an
// AVX-512 CPU without AVX512_BF16 the same packed weights run on fp32 FMAs, each pair word widened
// in registers and A packed as fp32 (gemm_bf16_tiles.h): half the weight bytes of fp32, the
// activations unrounded.
#pragma once

#include <cstdint>

#include "runtime/cpu/aligned_array.h"
#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/gemm_partition.h"
#include "runtime/cpu/quantize.h"

namespace cuvil::runtime {
class ThreadPool;
}

namespace cuvil::runtime::cpu {

inline constexpr int kBf16MR = 12;
inline constexpr int kBf16NR = 32;
// Products of at most this many rows (decode) stream B once and ignore Bf16Blocking.
inline constexpr int64_t kBf16SkinnyRows = 4;

// Words (uint32) a packed B of k x n occupies.
int64_t bf16_packed_words(int64_t k, int64_t n);
// Packs B[k, n] (row stride ldb), or with `transposed` B^T stored [n, k] (a linear weight), into
// dst (bf16_packed_words(k, n) words). Parallel over slivers when a pool is given.
void pack_b_bf16(const float* b, int64_t ldb, bool transposed, int64_t k, int64_t n, uint32_t* dst,
                 ThreadPool* pool = nullptr);

// Owning packed weights, made once (Step::prepared).
struct Bf16PackedWeights {
  int64_t k = 0, n = 0;
  AlignedArray<uint32_t> words;
};

struct Bf16Blocking {
  int64_t mc = 192;   // rows of A per packed panel, rounded up to MR
  int64_t kc = 512;   // depth per panel (even; a B sliver of kc x NR bf16 is 32 KiB)
  int64_t nc = 1024;  // columns per block of C finished together, rounded up to NR
  GemmPartition partition = GemmPartition::automatic;  // the split between threads
};

struct Bf16Gemm {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  // A[m, k] fp32, row stride lda
  int64_t lda = 0;
  // Set: A is the im2col of this NHWC convolution (groups 1) with `a` its input, read in place
  // while A is packed (no column buffer); row r is output pixel r, K runs (kh, kw, c), lda is
  // unused. Only for more than kBf16SkinnyRows rows, on the VDPBF16PS path (not AMX).
  const ConvGeometry* im2col = nullptr;
  const uint32_t* b = nullptr;  // packed B (pack_b_bf16)
  float* c = nullptr;           // C[m, n], row stride ldc; overwritten
  int64_t ldc = 0;
  const float* bias = nullptr;  // bias[n], per column
  const Epilogue* epilogue = nullptr;
  Bf16Blocking blocking;
};

// Threads split C; requires cpu_has_avx512() (VDPBF16PS where cpu_has_avx512_bf16(), else the
// widened tiles).
void gemm_bf16(const Bf16Gemm& g, ThreadPool& pool);

}  // namespace cuvil::runtime::cpu
