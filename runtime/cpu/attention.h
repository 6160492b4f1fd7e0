// Scaled dot-product attention kernels beyond the plain blocked one (kernels.h: sdpa_blocked).
// Node attributes read once at lowering (set by the attention-tiling pass): "attention.block_q"
// (stacked query rows per tile) and "attention.block_kv" (keys per tile, rounded up to a multiple
// of 32).
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

// Defaults when the attributes are absent: the best measured on the development machine.
inline constexpr int64_t kFlashBlockQ = 64;
inline constexpr int64_t kFlashBlockKv = 256;

// Query rows per kv head (grouped heads x query positions) at or below which packing every key
// costs more than flash saves (decode): sdpa.auto runs the blocked kernel there, and
// reduced-precision keeps such attention f32 (the bf16 kernel is flash).
inline constexpr int64_t kFlashMinRowsExclusive = 16;
inline bool flash_pays(int64_t rows_per_kv_head) {
  return rows_per_kv_head > kFlashMinRowsExclusive;
}

// Flash-style: tiles of queries x tiles of keys with an online softmax; only block_q x block_kv
// scores live per thread. Causal (end-aligned), grouped-query (query heads sharing a kv head are
// stacked position-major into one tile), any Sq/Skv/D.
void sdpa_flash(const KernelArgs& args);
// sdpa_flash with Q K^T and P V in bf16 (VDPBF16PS; Q, K, V and the softmax's P rounded to bf16),
// fp32 softmax and accumulators; requires cpu_has_avx512_bf16(). Its schedule is the flash one.
void sdpa_flash_bf16(const KernelArgs& args);
// Flash for prefill-like shapes, the blocked kernel when each kv head has few query rows (decode),
// where packing keys costs more than it saves.
void sdpa_auto(const KernelArgs& args);

// Their schedule hooks (KernelInfo::schedule): the causal mask and the scale, whether the step
// runs flash, and its tiles. Only a step that runs flash reads the tiling attributes (knob
// reach).
struct SdpaSchedule {
  bool causal = false;
  double scale = 1.0;  // "scale", by default 1 / sqrt(head dim)
  bool flash = true;
  int64_t block_q = kFlashBlockQ, block_kv = kFlashBlockKv;  // as the kernel uses them
};
std::shared_ptr<const void> sdpa_flash_schedule(const Step& step);
std::shared_ptr<const void> sdpa_auto_schedule(const Step& step);
std::shared_ptr<const void> sdpa_blocked_schedule(const Step& step);

}  // namespace cuvil::runtime::cpu
