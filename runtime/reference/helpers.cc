// Index helpers shared by the reference kernels: layouts, strides and broadcasting.
#include "base/error.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

ir::Layout layout_attr(const ir::Node& node) {
  const std::string text = node.attrs.get_string("layout", "nchw");
  ir::Layout layout = ir::Layout::nchw;
  if (!ir::parse_layout(text, &layout) || layout == ir::Layout::any) {
    throw UserError("node '" + node.name + "': unknown layout '" + text + "'");
  }
  return layout;
}

Dims4 dims4(const ir::Shape& shape, ir::Layout layout) {
  if (layout == ir::Layout::nchw16c) {
    CUVIL_CHECK(shape.size() == 5 && shape[4] == ir::kChannelBlock,
                "expected an nchw16c activation, got " + ir::to_string(shape));
    const int64_t n = shape[0], blocks = shape[1], h = shape[2], w = shape[3], b = shape[4];
    return {n, blocks * b, h, w, blocks * h * w * b, h * w * b, w * b, b, b};
  }
  CUVIL_CHECK(shape.size() == 4, "expected a 4-D activation, got " + ir::to_string(shape));
  if (layout == ir::Layout::nhwc) {
    const int64_t n = shape[0], h = shape[1], w = shape[2], c = shape[3];
    return {n, c, h, w, h * w * c, 1, w * c, c};
  }
  const int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  return {n, c, h, w, c * h * w, h * w, w, 1};
}

std::vector<int64_t> strides_of(const ir::Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::vector<int64_t> broadcast_strides(const ir::Shape& in, const ir::Shape& out) {
  CUVIL_CHECK(in.size() <= out.size(),
              "cannot broadcast " + ir::to_string(in) + " to " + ir::to_string(out));
  const std::vector<int64_t> dense = strides_of(in);
  const size_t lead = out.size() - in.size();
  std::vector<int64_t> strides(out.size(), 0);
  for (size_t d = 0; d < in.size(); ++d) {
    CUVIL_CHECK(in[d] == out[lead + d] || in[d] == 1,
                "cannot broadcast " + ir::to_string(in) + " to " + ir::to_string(out));
    strides[lead + d] = in[d] == 1 ? 0 : dense[d];
  }
  return strides;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  const int64_t a = axis < 0 ? axis + r : axis;
  CUVIL_CHECK(a >= 0 && a < r, "axis " + std::to_string(axis) + " out of range");
  return a;
}

}  // namespace cuvil::runtime::reference
