#include "bench_suite/models/onnx/window_attrs.h"

#include <algorithm>
#include <limits>

namespace cuvil::bench::onnx_import {

void check_window_attr(const NodeContext& c, const char* name, int64_t v) {
  if (v > kMaxWindowAttr) {
    c.fail(std::string(name) + " entry " + std::to_string(v) + " is above 2^31 (not supported)");
  }
}

Padding spatial_padding(NodeContext& c, const ir::Shape& in_spatial,
                        const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides) {
  const size_t r = in_spatial.size();
  Padding p{std::vector<int64_t>(r, 0), std::vector<int64_t>(r, 0)};
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    const std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
    if (pads.size() != 2 * r) c.fail("pads must have " + std::to_string(2 * r) + " entries");
    for (size_t d = 0; d < r; ++d) {
      p.begin[d] = pads[d];
      p.end[d] = pads[d + r];
      if (p.begin[d] < 0 || p.end[d] < 0) c.fail("negative pads are not supported");
      check_window_attr(c, "pads", std::max(p.begin[d], p.end[d]));
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < r; ++d) {
      const int64_t out = (in_spatial[d] + strides[d] - 1) / strides[d];
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * strides[d] + kernel[d] - in_spatial[d]);
      const int64_t small = total / 2;
      p.begin[d] = auto_pad == "SAME_UPPER" ? small : total - small;
      p.end[d] = total - p.begin[d];
    }
  } else if (auto_pad != "VALID") {
    c.fail("unknown auto_pad '" + auto_pad + "'");
  }
  return p;
}

void require_unit_dilations(NodeContext& c, size_t r) {
  for (int64_t d : c.attr_ints("dilations", std::vector<int64_t>(r, 1))) {
    if (d != 1) c.fail("dilations other than 1 are not supported");
  }
}

std::vector<int64_t> per_axis_attr(NodeContext& c, const char* name, size_t r) {
  std::vector<int64_t> s = c.attr_ints(name, std::vector<int64_t>(r, 1));
  if (s.size() != r) c.fail(std::string(name) + " must have " + std::to_string(r) + " entries");
  for (int64_t v : s) {
    if (v < 1) c.fail(std::string(name) + " must be >= 1");
    check_window_attr(c, name, v);
  }
  return s;
}

std::vector<int64_t> kernel_shape_attr(NodeContext& c, size_t r) {
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {});
  if (kernel.size() != r) c.fail("kernel_shape must have " + std::to_string(r) + " entries");
  for (int64_t k : kernel) {
    if (k < 1) c.fail("kernel_shape entries must be >= 1");
    check_window_attr(c, "kernel_shape", k);
  }
  return kernel;
}

ir::ValueId pad_spatial(NodeContext& c, ir::ValueId x, const std::vector<int64_t>& extra,
                        double value, const std::string& suffix) {
  const std::vector<int64_t> pads = {0, 0, extra[0], extra[1], 0, 0, extra[2], extra[3]};
  return c.add(ir::OpKind::pad, {x},
               {{"pads", pads}, {"mode", std::string("constant")}, {"value", value}}, suffix);
}

std::vector<int64_t> split_padding(NodeContext& c, ir::ValueId& x,
                                   const std::vector<int64_t>& begin,
                                   const std::vector<int64_t>& end, double fill) {
  const std::vector<int64_t> sym = {std::min(begin[0], end[0]), std::min(begin[1], end[1])};
  if (begin[0] != end[0] || begin[1] != end[1]) {
    x = pad_spatial(c, x, {begin[0] - sym[0], begin[1] - sym[1], end[0] - sym[0], end[1] - sym[1]},
                    fill, "pad");
  }
  return sym;
}

std::vector<int64_t> pool_padding(NodeContext& c, ir::ValueId& x,
                                  const std::vector<int64_t>& kernel,
                                  const std::vector<int64_t>& begin,
                                  const std::vector<int64_t>& end, bool is_max, bool include_pad) {
  const bool asymmetric = begin[0] != end[0] || begin[1] != end[1];
  const bool too_wide =
      std::min(begin[0], end[0]) * 2 > kernel[0] || std::min(begin[1], end[1]) * 2 > kernel[1];
  if ((asymmetric || too_wide) && !is_max && !include_pad)
    c.fail("asymmetric padding with count_include_pad 0 is not supported");
  // Padding a max with -inf (an average with zeros counted) changes nothing else.
  const double fill = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
  if (!too_wide) return split_padding(c, x, begin, end, fill);
  x = pad_spatial(c, x, {begin[0], begin[1], end[0], end[1]}, fill, "pad");
  return {0, 0};
}

ir::ValueId as_2d(NodeContext& c, ir::ValueId x, const std::string& suffix) {
  ir::Shape s = c.value_shape(x);
  s.insert(s.begin() + 2, 1);
  return c.add(ir::OpKind::reshape, {x}, {{"shape", s}}, suffix);
}

}  // namespace cuvil::bench::onnx_import
