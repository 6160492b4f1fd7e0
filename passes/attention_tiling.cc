#include "passes/attention_tiling.h"

#include <string>

#include "runtime/cpu/attrs.h"

namespace cuvil::passes {

std::vector<ParamSpec> AttentionTilingPass::params() const {
  return {
      int_param("block_q", 16, 256, 64,
                "flash: stacked query rows per tile (grouped-query heads share a tile)",
                Scale::log),
      int_param("block_kv", 32, 1024, 256,
                "flash: keys per tile (rounded up to a multiple of 32); block_q x block_kv "
                "scores live per thread",
                Scale::log),
      choice_param("impl", {"auto", "flash", "blocked"}, "auto",
                   "attention kernel: flash (query x key tiles, online softmax), blocked (query "
                   "blocks x all keys, two GEMMs), auto (flash unless a kv head has <= 16 query "
                   "rows, as in decode)"),
  };
}

void AttentionTilingPass::run(ir::Graph& graph, const ParamMap& params) const {
  const std::string impl = "sdpa." + param_choice(params, "impl");
  for (ir::Node& n : graph.mutable_nodes()) {
    if (n.op != ir::OpKind::sdpa) continue;
    if (!n.attrs.has("impl")) n.attrs.set("impl", impl, "attention-tiling.impl");
    n.attrs.set(runtime::cpu::attrs::kAttentionBlockQ, param_int(params, "block_q"),
                "attention-tiling.block_q");
    n.attrs.set(runtime::cpu::attrs::kAttentionBlockKv, param_int(params, "block_kv"),
                "attention-tiling.block_kv");
  }
}

}  // namespace cuvil::passes
