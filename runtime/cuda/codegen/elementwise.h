// Standalone fused elementwise chains: out = steps(x) where x is input 0 and each binary step
// reads the next input, all broadcast (numpy rules, through per-dimension strides, 0 =
// broadcast) to the output's shape of rank <= kMaxElementwiseRank. Each thread computes
// `vector_width` consecutive output elements.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cuda/codegen/epilogue.h"
#include "runtime/cuda/codegen/kernel_source.h"

namespace cuvil::runtime::cuda::codegen {

inline constexpr int kMaxElementwiseRank = 6;
inline constexpr int kMaxElementwiseInputs = 1 + kMaxEpilogueOperands;

struct ElementwiseProblem {
  int rank = 1;
  ElemType input = ElemType::f32;  // input 0
  ElemType output = ElemType::f32;
  std::vector<EpilogueStepSpec> steps;  // binary steps' operand types are inputs 1..
  // Compile-time fast path: every input has the output's shape and is contiguous.
  bool all_contiguous = false;
};

struct ElementwiseTiles {
  int threads = 256;
  int vector_width = 4;
  bool operator==(const ElementwiseTiles&) const = default;
};

struct ElementwiseKernelParams {
  void* out = nullptr;
  const void* inputs[kMaxElementwiseInputs] = {};
  int64_t total = 0;
  int64_t shape[kMaxElementwiseRank] = {};
  int64_t strides[kMaxElementwiseInputs][kMaxElementwiseRank] = {};  // elements; 0 = broadcast
};

void validate_elementwise(const ElementwiseProblem& problem, const ElementwiseTiles& tiles);
KernelSource elementwise_source(const ElementwiseProblem& problem, const ElementwiseTiles& tiles);
LaunchGeometry elementwise_geometry(int64_t total, const ElementwiseTiles& tiles);
// Params for output `shape` and each input's shape (numpy broadcasting; contiguous inputs).
// UserError when an input does not broadcast to `shape`.
ElementwiseKernelParams elementwise_params(const std::vector<int64_t>& shape, void* out,
                                           const std::vector<const void*>& inputs,
                                           const std::vector<std::vector<int64_t>>& input_shapes);

}  // namespace cuvil::runtime::cuda::codegen
