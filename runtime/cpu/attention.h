// Scaled dot-product attention kernels beyond the plain blocked one (kernels.h: sdpa_blocked).
// Node attributes read (set by the attention-tiling pass): "attention.block_q" (stacked query
// rows per tile) and "attention.block_kv" (keys per tile, rounded up to a multiple of 32).
#pragma once

#include <cstdint>

#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

// Defaults when the attributes are absent: the best measured on the development machine.
inline constexpr int64_t kFlashBlockQ = 64;
inline constexpr int64_t kFlashBlockKv = 256;

// Flash-style: tiles of queries x tiles of keys with an online softmax; only block_q x block_kv
// scores live per thread. Causal (end-aligned), grouped-query (query heads sharing a kv head are
// stacked position-major into one tile), any Sq/Skv/D.
void sdpa_flash(const KernelArgs& args);
// Flash for prefill-like shapes, the blocked kernel when each kv head has few query rows (decode),
// where packing keys costs more than it saves.
void sdpa_auto(const KernelArgs& args);

}  // namespace cuvil::runtime::cpu
