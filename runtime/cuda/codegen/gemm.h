// Tensor-core GEMM generator: C[b] = epilogue(A[b] (M x K) * B[b] (K x N) + bias), fp32
// accumulate. bf16/f16 inputs use mma.sync m16n8k16 (+ ldmatrix); f32 inputs use tf32 mma.sync
// m16n8k8 (inputs rounded to tf32, as cuBLAS's TF32 mode). Global -> shared memory through a
// multi-stage cp.async pipeline. Any M, N, K: out-of-range rows/columns are zero-filled, stores
// are predicated. The tile parameters are compiled into the kernel; M, N, K and the pointers are
// launch arguments (one compiled kernel serves every M, e.g. every prefill length).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/codegen/epilogue.h"
#include "runtime/cuda/codegen/kernel_source.h"

namespace cuvil::runtime::cuda::codegen {

struct GemmTiles {
  int block_m = 128, block_n = 128, block_k = 32;  // block tile
  int warp_m = 64, warp_n = 64;                    // warp tile: (bm/wm)*(bn/wn) warps per block
  int stages = 3;                                  // cp.async shared-memory pipeline depth (>= 2)
  int vector_width = 8;  // elements per global load (16 bytes for 16-bit types at 8)
  // > 1: that many blocks share each output tile along K (more blocks for small M*N, e.g. decode)
  // and atomically add partial sums: C must be f32 and ZEROED before the launch, no epilogue
  // steps (bias is added once). Dense GEMM only (conv: 1).
  int split_k = 1;
  bool operator==(const GemmTiles&) const = default;
};

struct GemmProblem {
  // Sizes decide alignment only (the vector width actually used divides the leading dimensions);
  // the kernel takes M, N, K at launch, so a kernel generated for one M runs for any M.
  int64_t m = 1, n = 1, k = 1;
  int64_t batch = 1;
  ElemType a = ElemType::bf16, b = ElemType::bf16;  // a and b must match (f32 -> tf32)
  // f32 inputs only: split each operand into tf32 high + remainder and sum three tensor-core
  // products (3xTF32): about fp32 accuracy (for the 1e-4 verify bound) at ~3x the mma work.
  bool exact_f32 = false;
  ElemType c = ElemType::bf16;
  // B's storage: true = [N, K] row-major (linear's weight, PyTorch), false = [K, N] (matmul).
  bool b_transposed = true;
  bool bias = false;  // bias[N] of type `bias_type`, added before the epilogue steps
  ElemType bias_type = ElemType::f32;
  std::vector<EpilogueStepSpec> epilogue;
};

// Launch arguments: the kernel takes this one struct by value (8-byte fields only, so the host
// and device layouts agree). Leading dimensions are elements; batch strides may be 0 (broadcast).
struct GemmKernelParams {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  const void* bias = nullptr;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_c = 0;
  EpilogueOperandArg operands[kMaxEpilogueOperands];
};

// A starting point when no pass chose tiles (always legal for `problem`): 128x128 tiles for large
// problems, 64x64 for mid-sized M or when 128x128 blocks would not fill `sm_count` SMs, and for
// decode-shaped M <= 16 a 16-row tile with a deep pipeline plus split-K (when the output is f32
// without epilogue steps) so that the weight stream is spread over the whole device.
GemmTiles default_gemm_tiles(const GemmProblem& problem, int sm_count = 132);

// Throws UserError naming the parameter for illegal tiles (divisibility, warps, threads <= 1024,
// shared memory <= 227 KiB) or an unsupported problem (mixed input types, bad epilogue).
void validate_gemm(const GemmProblem& problem, const GemmTiles& tiles);
KernelSource gemm_source(const GemmProblem& problem, const GemmTiles& tiles);
LaunchGeometry gemm_geometry(const GemmProblem& problem, const GemmTiles& tiles);
// Dense row-major params for `problem` (lda = K, ldb = K or N, ldc = N, batch strides M*K etc.).
GemmKernelParams gemm_dense_params(const GemmProblem& problem, const void* a, const void* b,
                                   void* c, const void* bias = nullptr);
// The vector width the kernel really uses for A and B (largest <= tiles.vector_width dividing the
// leading dimension; 16-bit widths of 1 fall back to synchronous loads).
int gemm_vector_width_a(const GemmProblem& problem, const GemmTiles& tiles);
int gemm_vector_width_b(const GemmProblem& problem, const GemmTiles& tiles);
int gemm_shared_bytes(const GemmProblem& problem, const GemmTiles& tiles);
// UserError when launch arguments break what the kernel compiled for `problem` assumes: A and B
// pointers aligned to their vector loads, leading dimensions and batch strides multiples of the
// vector widths, params.k equal to problem.k's alignment class (cp.async would fault otherwise).
void check_gemm_params(const GemmProblem& problem, const GemmTiles& tiles,
                       const GemmKernelParams& params);

}  // namespace cuvil::runtime::cuda::codegen
