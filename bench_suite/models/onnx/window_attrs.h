// The window attributes convolutions and pools share (kernel, strides, dilations, pads), checked
// once, and the NCHW helpers their mappings build with (map_nn.cc, map_conv_transpose.cc,
// map_conv3d.cc).
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

// Begin and end padding of each spatial axis, from pads or auto_pad (over `kernel`, the windows'
// spans).
struct Padding {
  std::vector<int64_t> begin, end;
};
Padding spatial_padding(NodeContext& c, const ir::Shape& in_spatial,
                        const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides);

// Refuses dilations other than 1 (pools).
void require_unit_dilations(NodeContext& c, size_t r);

// A window attribute with one entry >= 1 per spatial axis, 1 when absent: strides, dilations.
std::vector<int64_t> per_axis_attr(NodeContext& c, const char* name, size_t r);

// A pool's kernel_shape: required, one entry >= 1 per spatial axis, each within kMaxWindowAttr.
std::vector<int64_t> kernel_shape_attr(NodeContext& c, size_t r);

// x padded explicitly by `extra` ([h_begin, w_begin, h_end, w_end]) with `value` on an NCHW value.
ir::ValueId pad_spatial(NodeContext& c, ir::ValueId x, const std::vector<int64_t>& extra,
                        double value, const std::string& suffix);

// A 2-D window's padding ([h, w] begins and ends): the symmetric part, which it returns for the
// op's `pad` attribute, and an asymmetric remainder padded explicitly on x with `fill`.
std::vector<int64_t> split_padding(NodeContext& c, ir::ValueId& x,
                                   const std::vector<int64_t>& begin,
                                   const std::vector<int64_t>& end, double fill);

// A 2-D pool's padding ([h, w] begins and ends) over `kernel` [kh, kw]: symmetric padding stays in
// the pool's `pad` attribute, which it returns; an asymmetric remainder, or padding wider than
// half the window, pads x explicitly (-inf for a max; zeros for an average, which then must
// count them).
std::vector<int64_t> pool_padding(NodeContext& c, ir::ValueId& x,
                                  const std::vector<int64_t>& kernel,
                                  const std::vector<int64_t>& begin,
                                  const std::vector<int64_t>& end, bool is_max, bool include_pad);

// Rank-3 (1-D) activations run as rank 4 with a unit height; returns the NCHW value.
ir::ValueId as_2d(NodeContext& c, ir::ValueId x, const std::string& suffix);

// Conv, MaxPool and AveragePool over three spatial axes (video models), as their 2-D forms over
// depth slices (map_conv3d.cc); map_conv and map_pool hand rank-5 inputs to them.
void map_conv3d(NodeContext& c);
void map_pool3d(NodeContext& c);

}  // namespace cuvil::bench::onnx_import
