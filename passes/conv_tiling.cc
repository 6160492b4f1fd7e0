#include "passes/conv_tiling.h"

#include "runtime/cpu/attrs.h"

namespace cuvil::passes {

std::vector<ParamSpec> ConvTilingPass::params() const {
  return {
      int_param("vectors", 0, 4, 0,
                "output-channel vectors of 16 per register tile; the pixels per tile follow "
                "from the 32 zmm registers (accumulators + weights + one broadcast): 1 or 2 -> "
                "14 pixels, 3 -> 9, 4 -> 6; 0 = auto (4 for 1x1 stride-1 convolutions and output "
                "rows of 28 pixels or more, else 2)"),
      choice_param("partition", {"auto", "rows", "channels"}, "auto",
                   "how threads split a convolution: rows (output rows; Winograd: tiles), "
                   "channels (output channel blocks: each thread reads only its part of the "
                   "weights), auto (channels when there are fewer than 8 rows, or 12 Winograd "
                   "tiles, per thread)"),
      int_param("channels_per_pass", 16, 4096, 4096,
                "input channels summed per pass over a chunk of output rows, rounded down to a "
                "multiple of 16; fewer than the conv has keep one pass's weights in L1 for every "
                "pixel tile, partial sums going through the output (4096: all in one pass)",
                Scale::log),
      bool_param("prefetch_weights", true,
                 "while a block of output channels runs, prefetch the next block's packed "
                 "weights into L2, a slice per register tile (the hardware prefetcher stops at "
                 "4 KiB pages)"),
      choice_param("winograd_tile", {"auto", "2x2", "4x4"}, "auto",
                   "output tile of the Winograd 3x3 convolution (select-lowering conv_3x3: "
                   "winograd): F(2x2, 3x3) does 4 multiplies per output instead of 9 and has "
                   "1.8x the direct weights, F(4x4, 3x3) 2.25 multiplies with 4x the weights, "
                   "larger transforms and a little less accuracy; auto: 4x4 when the output has "
                   "at least 16 tiles of 4x4 (enough reuse of the weights) and its transformed "
                   "weights take at most 8 MiB, else 2x2"),
      int_param("winograd_block_kib", 32, 4096, 512,
                "Winograd: KiB of transformed input and GEMM results per block of tiles (whole "
                "register groups); the block stays in L2 while the transformed weights stream "
                "through L1",
                Scale::log),
  };
}

void ConvTilingPass::run(ir::Graph& graph, const ParamMap& params) const {
  const int64_t vectors = param_int(params, "vectors");
  const std::string& partition = param_choice(params, "partition");
  const int64_t per_pass = param_int(params, "channels_per_pass");
  const bool prefetch = param_bool(params, "prefetch_weights");
  const std::string& tile = param_choice(params, "winograd_tile");
  const int64_t winograd_tile = tile == "2x2" ? 2 : tile == "4x4" ? 4 : 0;
  const int64_t winograd_block_kib = param_int(params, "winograd_block_kib");
  for (ir::Node& n : graph.mutable_nodes()) {
    if (n.op != ir::OpKind::conv2d) continue;
    n.attrs.set(runtime::cpu::attrs::kConvVectors, vectors, "conv-tiling.vectors");
    n.attrs.set(runtime::cpu::attrs::kConvPartition, partition, "conv-tiling.partition");
    n.attrs.set(runtime::cpu::attrs::kConvChannelsPerPass, per_pass,
                "conv-tiling.channels_per_pass");
    n.attrs.set(runtime::cpu::attrs::kConvPrefetchWeights, int64_t{prefetch ? 1 : 0},
                "conv-tiling.prefetch_weights");
    n.attrs.set(runtime::cpu::attrs::kConvWinogradTile, winograd_tile, "conv-tiling.winograd_tile");
    n.attrs.set(runtime::cpu::attrs::kConvWinogradBlockKib, winograd_block_kib,
                "conv-tiling.winograd_block_kib");
  }
}

}  // namespace cuvil::passes
