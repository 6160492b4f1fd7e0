// Internal: the one tensor-core GEMM kernel body shared by gemm.cc (dense/batched) and conv.cc
// (implicit GEMM). Only how the A tile is addressed, the per-blockIdx.z base pointers and where
// results go differ; those pieces are generated code passed in here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/codegen/epilogue.h"
#include "runtime/cuda/codegen/gemm.h"

namespace cuvil::runtime::cuda::codegen::detail {

// Blocks needed to cover `a` items `b` at a time (a launch dimension).
inline unsigned ceil_div(int64_t a, int64_t b) {
  return static_cast<unsigned>((a + b - 1) / b);
}

struct GemmBodySpec {
  std::string kernel_name;
  ElemType in = ElemType::bf16;  // A and B
  ElemType out = ElemType::bf16;
  bool b_transposed = true;
  bool split_tf32 = false;         // f32 inputs only: 3xTF32 products
  int vector_a = 8, vector_b = 8;  // elements per global load, already legal for the problem
  GemmTiles tiles;
  bool bias = false;
  ElemType bias_type = ElemType::f32;
  std::vector<EpilogueStepSpec> epilogue;
  // Generated pieces (see gemm_body.cc for the variables in scope).
  std::string params_struct;  // "struct Params {...};"
  std::string setup;          // sets i64 M, N, K; const TIn* B; i64 ldb; (per blockIdx.z)
  std::string a_address;      // body of: bool a_src(const Params&, i64 z, i64 row, i64 kcol,
                              //   const TIn** src) -> false when zero
  std::string store;          // body run per result element: row, col, z, float v in scope
};

std::string gemm_body_source(const GemmBodySpec& spec);
// Store code: bias (indexed by `column`), epilogue steps for (batch, row, column), then the store
// of float v to p.c[out_index].
std::string gemm_store_code(bool bias, ElemType bias_type,
                            const std::vector<EpilogueStepSpec>& steps, ElemType out,
                            const std::string& batch, const std::string& column,
                            const std::string& out_index);
int gemm_body_shared_bytes(ElemType in, bool b_transposed, const GemmTiles& tiles);
// UserError naming the parameter when the tiles are illegal for input type `in`.
void validate_gemm_tiles(ElemType in, bool b_transposed, const GemmTiles& tiles);
// Largest power of two <= requested (and <= 16 bytes) dividing every value in `divides`.
int legal_vector_width(int requested, ElemType in, const std::vector<int64_t>& divides);

}  // namespace cuvil::runtime::cuda::codegen::detail
