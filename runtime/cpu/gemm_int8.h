// int8 GEMM on AVX512_VNNI (VPDPBUSD, u8 x s8 -> s32): C = dequant(Aq * Bq) (+ bias), then the
// step's epilogue, in fp32. Weights are quantised once (KernelInfo::prepare), symmetric per
// output column: B[k, j] ~ scale[j] * q[k, j], q in [-127, 127], packed in NR-column slivers of
// K quads (word [s][p][j] holds q[4p .. 4p+3][32s + j]). Activations are quantised per call per
// tensor to u8 with a zero point za (ActivationQuant). VPDPBUSD needs the unsigned operand on the
// activation side, so the int32 sum is sum_k (a_u8 - za) q = acc - za * colsum[j]: the
// compensation colsum[j] = sum_k q[k, j] is computed with the weights, subtracted in int32
// before the one conversion to fp32 (K is not split, so it is exact).
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/cpu/aligned_array.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/gemm_partition.h"
#include "runtime/cpu/quantize.h"

namespace cuvil::runtime {
class ThreadPool;
}

namespace cuvil::runtime::cpu {

inline constexpr int kInt8MR = 12;
inline constexpr int kInt8NR = 32;
// Products of at most this many rows (decode) stream B once and ignore Int8Gemm::mc.
inline constexpr int64_t kInt8SkinnyRows = 4;
inline constexpr int64_t kInt8DefaultMc = 96;

struct Int8PackedWeights {
  int64_t k = 0, n = 0;
  AlignedArray<uint32_t> words;  // ceil(n/NR) x ceil(k/4) x NR
  AlignedArray<float> scale;     // per column, padded to a whole sliver
  AlignedArray<int32_t> colsum;  // per column, padded to a whole sliver
};

// Quantises and packs B^T stored [n, k] with row stride ld (a linear weight, or a conv weight
// flattened to [out channels, k]): each row is one output column of C.
std::shared_ptr<Int8PackedWeights> quantize_pack_int8(const float* bt, int64_t n, int64_t k,
                                                      int64_t ld);

struct Int8Gemm {
  int64_t m = 0;
  const uint8_t* a = nullptr;  // A[m, k] quantised u8, row stride lda; rows readable to k+3
  int64_t lda = 0;
  ActivationQuant aq;
  const Int8PackedWeights* b = nullptr;  // its k and n are the product's
  float* c = nullptr;                    // C[m, n], row stride ldc; overwritten
  int64_t ldc = 0;
  const float* bias = nullptr;  // bias[n]
  const Epilogue* epilogue = nullptr;
  int64_t mc = kInt8DefaultMc;  // rows of A per packed panel (the whole K of a row is packed)
  GemmPartition partition = GemmPartition::automatic;  // the split between threads
};

// Threads split C; requires cpu_has_avx512_vnni().
void gemm_int8(const Int8Gemm& g, ThreadPool& pool);

// Bytes to allocate for u8 activations of `count` elements: the GEMM reads rows in 4-byte
// quads, so buffers carry a small tail.
inline int64_t u8_buffer_bytes(int64_t count) {
  return count + 64;
}

}  // namespace cuvil::runtime::cpu
