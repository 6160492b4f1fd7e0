#include "bench_suite/models/onnx/shape_util.h"

#include <algorithm>

#include "base/error.h"

namespace cuvil::bench::onnx_import {

namespace {

std::vector<int64_t> strides_of(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Copies element `src_index(out_flat)` of `t` to every position of a tensor of `shape`.
template <class F>
HostTensor remap(const HostTensor& t, const ir::Shape& shape, F src_index) {
  check_fold_size(shape);
  HostTensor out;
  out.kind = t.kind;
  out.shape = shape;
  const int64_t n = ir::num_elements(shape);
  if (t.is_float()) {
    out.f.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      out.f[static_cast<size_t>(k)] = t.f[static_cast<size_t>(src_index(k))];
  } else {
    out.i.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      out.i[static_cast<size_t>(k)] = t.i[static_cast<size_t>(src_index(k))];
  }
  return out;
}

}  // namespace

void check_fold_size(const ir::Shape& shape) {
  if (ir::bounded_elements(shape, kMaxFoldedElements) < 0) {
    throw FoldTooLarge("a constant of shape " + ir::to_string(shape) +
                       " is too large to compute at import (at most 2^27 elements)");
  }
}

int64_t normalize_axis(const NodeContext& c, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  const int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= std::max<int64_t>(r, 1)) {
    c.fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
  }
  return a;
}

std::vector<int64_t> normalize_axes(const NodeContext& c, std::vector<int64_t> axes, size_t rank) {
  for (int64_t& a : axes) a = normalize_axis(c, a, rank);
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    c.fail("an axis is repeated");
  return axes;
}

std::vector<int64_t> listed_axes(const NodeContext& c, size_t rank) {
  if (c.has_attr("axes")) return normalize_axes(c, c.attr_ints("axes", {}), rank);
  std::vector<int64_t> all;
  for (size_t d = 0; d < rank; ++d) all.push_back(static_cast<int64_t>(d));
  return all;
}

ir::Shape reshape_target(const NodeContext& c, const ir::Shape& in,
                         const std::vector<int64_t>& spec, bool allowzero) {
  ir::Shape s(spec.begin(), spec.end());
  int wild = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0 && !allowzero) {
      if (i >= in.size())
        c.fail("shape entry 0 at axis " + std::to_string(i) + " copies no input axis");
      s[i] = in[i];
    }
    if (s[i] == -1) {
      if (wild >= 0) c.fail("shape has more than one -1");
      wild = static_cast<int>(i);
    } else if (s[i] < 0) {
      c.fail("shape entry " + std::to_string(s[i]) + " is not allowed");
    } else {
      if (s[i] > kMaxElements || (s[i] > 0 && known > kMaxElements / s[i]))
        c.fail("shape " + ir::to_string(ir::Shape(spec.begin(), spec.end())) +
               " has more than 2^40 elements");
      known *= s[i];
    }
  }
  const int64_t total = ir::num_elements(in);
  if (wild >= 0) {
    if (known == 0 || total % known != 0)
      c.fail("cannot reshape " + ir::to_string(in) + " to " +
             ir::to_string(ir::Shape(spec.begin(), spec.end())));
    s[static_cast<size_t>(wild)] = total / known;
  }
  if (bounded_elements(s) != total)
    c.fail("cannot reshape " + ir::to_string(in) + " to " + ir::to_string(s));
  return s;
}

ir::Shape broadcast_shapes(const NodeContext& c, const ir::Shape& a, const ir::Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  ir::Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      c.fail("shapes " + ir::to_string(a) + " and " + ir::to_string(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<AxisSlice> slice_ranges(const NodeContext& c, const ir::Shape& in,
                                    const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& ends,
                                    const std::vector<int64_t>& axes_in,
                                    const std::vector<int64_t>& steps) {
  if (starts.size() != ends.size()) c.fail("starts and ends differ in length");
  std::vector<int64_t> axes = axes_in;
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.size() != starts.size()) c.fail("axes and starts differ in length");
  if (!steps.empty() && steps.size() != starts.size()) c.fail("steps and starts differ in length");
  axes = normalize_axes(c, axes, in.size());
  std::vector<AxisSlice> out;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0) c.fail("slice step of axis " + std::to_string(axes[i]) + " is 0");
    const int64_t dim = in[static_cast<size_t>(axes[i])];
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    // ONNX's clamping: [0, dim] walking up, [-1, dim - 1] walking down (-1: past the front).
    s = step > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    e = step > 0 ? std::clamp<int64_t>(e, 0, dim) : std::clamp<int64_t>(e, -1, dim - 1);
    // A step longer than the axis picks one element either way; bounding it keeps size() in range.
    AxisSlice r{axes[i], s, e, std::clamp<int64_t>(step, -(dim + 1), dim + 1)};
    if (r.size() <= 0) r.end = r.start;  // empty: folds on constants, refused at run time
    out.push_back(r);
  }
  return out;
}

HostTensor transpose_tensor(const HostTensor& t, const std::vector<int64_t>& perm) {
  ir::Shape shape(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) shape[d] = t.shape[static_cast<size_t>(perm[d])];
  const std::vector<int64_t> in_st = strides_of(t.shape);
  const std::vector<int64_t> out_st = strides_of(shape);
  return remap(t, shape, [&](int64_t k) {
    int64_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t idx = (k / out_st[d]) % shape[d];
      src += idx * in_st[static_cast<size_t>(perm[d])];
    }
    return src;
  });
}

HostTensor slice_tensor(const HostTensor& t, const std::vector<AxisSlice>& ranges) {
  ir::Shape shape = t.shape;
  // Per axis, where the slice starts and how far apart its elements are in the input.
  struct AxisWalk {
    int64_t begin = 0, step = 1;
  };
  std::vector<AxisWalk> walk(shape.size());
  for (const AxisSlice& r : ranges) {
    shape[static_cast<size_t>(r.axis)] = r.size();
    walk[static_cast<size_t>(r.axis)] = {r.start, r.step};
  }
  const std::vector<int64_t> in_st = strides_of(t.shape);
  const std::vector<int64_t> out_st = strides_of(shape);
  return remap(t, shape, [&](int64_t k) {
    int64_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      src += (walk[d].begin + ((k / out_st[d]) % shape[d]) * walk[d].step) * in_st[d];
    return src;
  });
}

HostTensor gather_tensor(const HostTensor& data, int64_t axis, const HostTensor& indices,
                         const NodeContext& c) {
  const size_t ax = static_cast<size_t>(axis);
  const int64_t size = data.shape[ax];
  ir::Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  int64_t inner = 1;
  for (size_t d = ax + 1; d < data.shape.size(); ++d) inner *= data.shape[d];
  const int64_t count = indices.numel();
  std::vector<int64_t> idx(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k)
    idx[static_cast<size_t>(k)] = checked_index(c, indices.integer(k), size);
  return remap(data, shape, [&](int64_t k) {
    const int64_t in_pos = k % inner;
    const int64_t rest = k / inner;
    const int64_t which = rest % count;
    const int64_t o = rest / count;
    return (o * size + idx[static_cast<size_t>(which)]) * inner + in_pos;
  });
}

HostTensor broadcast_tensor(const HostTensor& t, const ir::Shape& shape) {
  const size_t r = shape.size();
  bool broadcasts = t.shape.size() <= r;
  for (size_t d = 0; broadcasts && d < t.shape.size(); ++d) {
    const int64_t want = shape[d + r - t.shape.size()];
    broadcasts = t.shape[d] == 1 || t.shape[d] == want;
  }
  if (!broadcasts) {
    throw ConstantError("a constant of shape " + ir::to_string(t.shape) +
                        " does not broadcast to " + ir::to_string(shape));
  }
  std::vector<int64_t> st(r, 0);
  const std::vector<int64_t> dense = strides_of(t.shape);
  for (size_t d = 0; d < t.shape.size(); ++d) {
    const size_t od = d + r - t.shape.size();
    st[od] = t.shape[d] == 1 ? 0 : dense[d];
  }
  const std::vector<int64_t> out_st = strides_of(shape);
  return remap(t, shape, [&](int64_t k) {
    int64_t src = 0;
    for (size_t d = 0; d < r; ++d) src += ((k / out_st[d]) % shape[d]) * st[d];
    return src;
  });
}

HostTensor concat_tensors(const std::vector<const HostTensor*>& parts, int64_t axis) {
  HostTensor out;
  out.kind = parts.front()->kind;
  for (const HostTensor* p : parts) {
    if (p->is_float()) out.kind = HostTensor::Kind::f32;  // mixed: floats win
  }
  out.shape = parts.front()->shape;
  const size_t ax = static_cast<size_t>(axis);
  out.shape[ax] = 0;
  for (const HostTensor* p : parts) {
    out.shape[ax] += p->shape[ax];
    check_fold_size(out.shape);  // checked as it grows: the sum cannot overflow
  }
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ax; ++d) outer *= out.shape[d];
  for (size_t d = ax + 1; d < out.shape.size(); ++d) inner *= out.shape[d];
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor* p : parts) {
      const int64_t chunk = p->shape[ax] * inner;
      for (int64_t k = 0; k < chunk; ++k) {
        if (out.is_float()) {
          out.f.push_back(static_cast<float>(p->number(o * chunk + k)));
        } else {
          out.i.push_back(p->i[static_cast<size_t>(o * chunk + k)]);
        }
      }
    }
  }
  return out;
}

HostTensor reshaped(HostTensor t, ir::Shape shape) {
  CUVIL_CHECK(ir::num_elements(shape) == t.numel(), "reshape keeps the element count");
  t.shape = std::move(shape);
  return t;
}

int64_t checked_index(const NodeContext& c, int64_t index, int64_t size) {
  const int64_t j = index < 0 ? index + size : index;
  if (j < 0 || j >= size)
    c.fail("index " + std::to_string(index) + " is out of range for axis size " +
           std::to_string(size));
  return j;
}

ElementPositions element_positions(const NodeContext& c, const ir::Shape& data,
                                   const ir::Shape& index_shape, int64_t axis) {
  if (index_shape.size() != data.size())
    c.fail("indices have rank " + std::to_string(index_shape.size()) + ", data " +
           std::to_string(data.size()));
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != axis && index_shape[d] > data[d])
      c.fail("indices' axis " + std::to_string(d) + " (" + std::to_string(index_shape[d]) +
             ") is longer than the data's (" + std::to_string(data[d]) + ")");
  }
  std::vector<int64_t> stride(data.size(), 1);
  for (size_t d = data.size(); d-- > 1;) stride[d - 1] = stride[d] * data[d];
  ElementPositions p;
  p.axis_stride = stride[static_cast<size_t>(axis)];
  p.axis_size = data[static_cast<size_t>(axis)];
  p.base.assign(static_cast<size_t>(ir::num_elements(index_shape)), 0);
  std::vector<int64_t> pos(index_shape.size(), 0);
  for (size_t k = 0; k < p.base.size(); ++k) {
    for (size_t d = 0; d < index_shape.size(); ++d)
      if (static_cast<int64_t>(d) != axis) p.base[k] += pos[d] * stride[d];
    for (size_t d = index_shape.size(); d-- > 0;) {
      if (++pos[d] < index_shape[d]) break;
      pos[d] = 0;
    }
  }
  return p;
}

}  // namespace cuvil::bench::onnx_import
