// Internal: the tensor-core (mma.sync m16n8k16) variant of the fused attention kernel, chosen by
// AttentionTiles::tensor_cores for bf16/f16 problems. attention.cc validates and dispatches.
#pragma once

#include <string>

#include "runtime/cuda/codegen/attention.h"

namespace cuvil::runtime::cuda::codegen::detail {

void validate_attention_tc(const AttentionProblem& problem, const AttentionTiles& tiles);
int attention_tc_shared_bytes(const AttentionProblem& problem, const AttentionTiles& tiles);
// Kernel body (after the device prelude) named `name`.
std::string attention_tc_body(const AttentionProblem& problem, const AttentionTiles& tiles,
                              const std::string& name);

}  // namespace cuvil::runtime::cuda::codegen::detail
