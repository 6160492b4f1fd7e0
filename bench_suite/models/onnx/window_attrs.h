// The window attributes convolutions and pools share (kernel, strides, dilations, pads), checked
// once, and the NCHW helpers their mappings build with (map_nn.cc, map_conv_transpose.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/node_context.h"

namespace cuvil::bench::onnx_import {

// Kernel, stride and pad entries above this are refused: with activations of at most 2^40
// elements the window arithmetic then stays far inside int64.
inline constexpr int64_t kMaxWindowAttr = int64_t{1} << 31;

// Refuses (naming the node) an entry `v` of attribute `name` above kMaxWindowAttr.
void check_window_attr(const NodeContext& c, const char* name, int64_t v);

// A window attribute with one entry >= 1 per spatial axis, 1 when absent: strides, dilations.
std::vector<int64_t> per_axis_attr(NodeContext& c, const char* name, size_t r);

// x padded explicitly by `extra` ([h_begin, w_begin, h_end, w_end]) with `value` on an NCHW value.
ir::ValueId pad_spatial(NodeContext& c, ir::ValueId x, const std::vector<int64_t>& extra,
                        double value, const std::string& suffix);

// Rank-3 (1-D) activations run as rank 4 with a unit height; returns the NCHW value.
ir::ValueId as_2d(NodeContext& c, ir::ValueId x, const std::string& suffix);

}  // namespace cuvil::bench::onnx_import
