// Shape arithmetic shared by the importer's mappings and its constant folding, with ONNX's
// conventions (negative axes, Reshape's 0 and -1, numpy broadcasting, Slice clamping).
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "bench_suite/models/onnx/host_tensor.h"
#include "bench_suite/models/onnx/node_context.h"

namespace cuvil::bench::onnx_import {

// Limits that keep a malformed model from overflowing shape arithmetic or making the importer
// allocate without bound: a tensor of the imported graph has at most ir::kMaxElements elements
// (shape inference refuses more), a constant folded at import at most kMaxFoldedElements (512 MiB
// of fp32).
using ir::bounded_elements;
using ir::kMaxElements;
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 27;
// Every value is stored as fp32, which carries integers (run-time indices, positions, flat
// offsets) exactly up to 2^24.
inline constexpr int64_t kMaxExactInteger = int64_t{1} << 24;

// The errors of the constant helpers below, which do not know the node they serve: the importer
// turns them into a UserError naming it.
class ConstantError : public UserError {
 public:
  using UserError::UserError;
};
// Folding would make a constant of more than kMaxFoldedElements.
class FoldTooLarge : public ConstantError {
 public:
  using ConstantError::ConstantError;
};
// Throws FoldTooLarge unless a constant of `shape` is within kMaxFoldedElements.
void check_fold_size(const ir::Shape& shape);

int64_t normalize_axis(const NodeContext& c, int64_t axis, size_t rank);
std::vector<int64_t> normalize_axes(const NodeContext& c, std::vector<int64_t> axes, size_t rank);
// Opset 18's `axes` attribute (Resize, CenterCropPad): the listed axes, normalised, or every
// axis in order where it is absent.
std::vector<int64_t> listed_axes(const NodeContext& c, size_t rank);

// Reshape's target: 0 copies the input's dimension (unless allowzero), one -1 is inferred.
ir::Shape reshape_target(const NodeContext& c, const ir::Shape& in,
                         const std::vector<int64_t>& spec, bool allowzero);
ir::Shape broadcast_shapes(const NodeContext& c, const ir::Shape& a, const ir::Shape& b);

// Slice of one axis after ONNX's clamping: elements start, start + step, ... before end (a
// negative step walks down from start). Run-time slices take step 1 only (map_slice refuses
// others); constants fold with any step.
struct AxisSlice {
  int64_t axis, start, end, step = 1;
  int64_t size() const {
    const int64_t n =
        step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
    return n > 0 ? n : 0;
  }
};
std::vector<AxisSlice> slice_ranges(const NodeContext& c, const ir::Shape& in,
                                    const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& ends,
                                    const std::vector<int64_t>& axes,
                                    const std::vector<int64_t>& steps);

// An index into an axis of `size` (negative counts from the end), checked to be in range.
int64_t checked_index(const NodeContext& c, int64_t index, int64_t size);

// GatherElements and ScatterElements address, for element p of an index tensor, the data element
// at p with its `axis` coordinate replaced by the index: each index-tensor element's flat data
// position with that coordinate 0 (add index * `axis_stride`). The index tensor must have the
// data's rank and be no longer than the data on the other axes.
struct ElementPositions {
  std::vector<int64_t> base;
  int64_t axis_stride = 1;
  int64_t axis_size = 1;
};
ElementPositions element_positions(const NodeContext& c, const ir::Shape& data,
                                   const ir::Shape& index_shape, int64_t axis);

// Data movement on constants (any kind): transpose, slice, gather, broadcast to a shape.
HostTensor transpose_tensor(const HostTensor& t, const std::vector<int64_t>& perm);
HostTensor slice_tensor(const HostTensor& t, const std::vector<AxisSlice>& ranges);
HostTensor gather_tensor(const HostTensor& data, int64_t axis, const HostTensor& indices,
                         const NodeContext& c);
// `t` broadcast (numpy rules) to `shape`; a ConstantError when it does not broadcast to it.
HostTensor broadcast_tensor(const HostTensor& t, const ir::Shape& shape);
HostTensor concat_tensors(const std::vector<const HostTensor*>& parts, int64_t axis);
// The same values with another shape (numel unchanged).
HostTensor reshaped(HostTensor t, ir::Shape shape);

}  // namespace cuvil::bench::onnx_import
