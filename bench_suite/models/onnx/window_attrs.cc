#include "bench_suite/models/onnx/window_attrs.h"

namespace cuvil::bench::onnx_import {

void check_window_attr(const NodeContext& c, const char* name, int64_t v) {
  if (v > kMaxWindowAttr) {
    c.fail(std::string(name) + " entry " + std::to_string(v) + " is above 2^31 (not supported)");
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

ir::ValueId pad_spatial(NodeContext& c, ir::ValueId x, const std::vector<int64_t>& extra,
                        double value, const std::string& suffix) {
  const std::vector<int64_t> pads = {0, 0, extra[0], extra[1], 0, 0, extra[2], extra[3]};
  return c.add(ir::OpKind::pad, {x},
               {{"pads", pads}, {"mode", std::string("constant")}, {"value", value}}, suffix);
}

ir::ValueId as_2d(NodeContext& c, ir::ValueId x, const std::string& suffix) {
  ir::Shape s = c.value_shape(x);
  s.insert(s.begin() + 2, 1);
  return c.add(ir::OpKind::reshape, {x}, {{"shape", s}}, suffix);
}

}  // namespace cuvil::bench::onnx_import
