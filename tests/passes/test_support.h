// Shared helpers for the pass tests: running one pass with chosen parameters, comparing a graph
// before and after against the reference interpreter, and small hand-built graphs.
#pragma once

#include <cstdint>
#include <string>

#include "passes/ir/graph.h"
#include "passes/pass.h"
#include "passes/pipeline.h"

namespace cuvil::passes::testing {

// Runs the registered pass `name` with its defaults overridden by `overrides`, then verifies.
void run_pass(ir::Graph& graph, const std::string& name, const ParamMap& overrides = {});

// Largest relative error over all outputs of `after` against `before`, both interpreted by the
// reference interpreter on the same random inputs.
double max_error_after(const ir::Graph& before, const ir::Graph& after, uint64_t seed = 7);

int count_ops(const ir::Graph& graph, ir::OpKind op);

// Worst relative error of a compiled plan's outputs against the reference run of `graph`; a
// missing output or one of another shape counts as 1e30.
double compiled_error_of(const Compiled& compiled, const ir::Graph& graph, uint64_t seed = 7);

// compiled_error_of `graph` compiled with `config` on `threads` threads, inputs of seed 5.
double compiled_vs_reference(const ir::Graph& graph, const PipelineConfig& config, int threads);

// A deterministic random constant of the given shape.
ir::ValueId random_constant(ir::Graph& graph, const std::string& name, ir::Shape shape,
                            uint64_t seed, float stddev = 0.5f);
// BatchNorm parameters for `channels`: positive variances, non-trivial scale and shift.
ir::ValueId add_batch_norm(ir::Graph& graph, ir::ValueId x, int64_t channels, uint64_t seed,
                           const std::string& layout = "nchw");
ir::ValueId add_conv(ir::Graph& graph, ir::ValueId x, int64_t in_channels, int64_t out_channels,
                     int64_t kernel, int64_t stride, bool bias, uint64_t seed,
                     const std::string& layout = "nchw", int64_t groups = 1);
// A kernel x kernel conv (NCHW, bias) with dilation {dh, dw}, stride and padding as given.
ir::ValueId add_dilated_conv(ir::Graph& graph, ir::ValueId x, int64_t in_channels,
                             int64_t out_channels, int64_t kernel, std::vector<int64_t> dilation,
                             int64_t stride, std::vector<int64_t> pad, uint64_t seed,
                             int64_t groups = 1);

// conv(3x3) -> BN -> relu -> conv(1x1, stride 2) -> BN -> + projection shortcut -> relu ->
// maxpool -> global avg pool -> linear: a ResNet bottleneck in miniature.
ir::Graph tiny_resnet(int64_t batch, int64_t channels, int64_t spatial);
// Linear projections to q/k/v, rope, grouped-query causal sdpa, SwiGLU MLP, RMS norms:
// a Llama decoder layer in miniature.
ir::Graph tiny_decoder(int64_t batch, int64_t seq, int64_t dim);
// Group norm -> silu -> conv + time embedding [N,C,1,1] -> upsample -> concat skip ->
// attention over H*W: an SDXL UNet block in miniature.
ir::Graph tiny_unet_block(int64_t batch, int64_t channels, int64_t spatial);

}  // namespace cuvil::passes::testing
