// ONNX sequences, held by the importer: a list of values whose length and positions are known at
// import (PyTorch writes them for `split`/`unbind` into lists, `torch.cat` of lists and the
// lists its unrolled loops build). The elements are ordinary values; concatenating and splitting
// are composed from Concat, Unsqueeze, Slice and Squeeze, so they fold on constants the same way.
#include <onnx/defs/attr_proto_util.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"

namespace cuvil::bench::onnx_import {

namespace {

// A one-element int64 vector: Slice's starts/ends/axes, Unsqueeze's axes.
ImportedValue one_int(int64_t value) {
  return ImportedValue::of(HostTensor::ints({1}, {value}));
}

// A node that takes `axes` as input from opset 13 and as an attribute before (Unsqueeze,
// Squeeze): the node and the inputs to import it with.
onnx::NodeProto axes_node(NodeContext& c, const char* op, const ImportedValue& data, int64_t axis,
                          std::vector<ImportedValue>& inputs) {
  onnx::NodeProto node;
  node.set_op_type(op);
  inputs = {data};
  if (c.opset() >= 13) {
    inputs.push_back(one_int(axis));
  } else {
    *node.add_attribute() = onnx::MakeAttribute("axes", std::vector<int64_t>{axis});
  }
  return node;
}

ImportedValue with_axes(NodeContext& c, const char* op, const ImportedValue& data, int64_t axis) {
  std::vector<ImportedValue> inputs;
  const onnx::NodeProto node = axes_node(c, op, data, axis, inputs);
  return c.import_composed(node, inputs, 1)[0];
}

// A position in a sequence of `n`: negative counts from the end; [-n, n - 1], or [-n, n] where
// one past the end is allowed.
int64_t position(NodeContext& c, size_t input, int64_t n, bool one_past_end) {
  const HostTensor& t = c.constant(input);
  if (t.numel() != 1) c.fail("the position (input " + std::to_string(input) + ") must be a scalar");
  const int64_t p = t.integer(0);
  const int64_t hi = one_past_end ? n : n - 1;
  if (p < -n || p > hi) {
    c.fail("position " + std::to_string(p) + " is outside [" + std::to_string(-n) + ", " +
           std::to_string(hi) + "] for a sequence of " + std::to_string(n));
  }
  return p < 0 ? p + n : p;
}

void map_sequence_empty(NodeContext& c) {
  c.set_sequence_output(0, {});
}

void map_sequence_construct(NodeContext& c) {
  std::vector<ImportedValue> elements;
  for (size_t i = 0; i < c.input_count(); ++i) {
    if (c.is_sequence(i)) c.fail("input " + std::to_string(i) + " is a sequence, not a tensor");
    elements.push_back(c.input(i));
  }
  c.set_sequence_output(0, std::move(elements));
}

void map_sequence_insert(NodeContext& c) {
  std::vector<ImportedValue> elements = c.sequence(0);
  if (c.is_sequence(1)) c.fail("input 1 is a sequence; SequenceInsert inserts a tensor");
  const int64_t n = static_cast<int64_t>(elements.size());
  const int64_t at = c.has_input(2) ? position(c, 2, n, true) : n;
  elements.insert(elements.begin() + at, c.input(1));
  c.set_sequence_output(0, std::move(elements));
}

void map_sequence_erase(NodeContext& c) {
  std::vector<ImportedValue> elements = c.sequence(0);
  const int64_t n = static_cast<int64_t>(elements.size());
  if (n == 0) c.fail("erases from an empty sequence");
  const int64_t at = c.has_input(1) ? position(c, 1, n, false) : n - 1;
  elements.erase(elements.begin() + at);
  c.set_sequence_output(0, std::move(elements));
}

void map_sequence_at(NodeContext& c) {
  const std::vector<ImportedValue>& elements = c.sequence(0);
  const int64_t n = static_cast<int64_t>(elements.size());
  c.set_output_value(0, elements[static_cast<size_t>(position(c, 1, n, false))]);
}

void map_sequence_length(NodeContext& c) {
  c.set_constant_output(0, HostTensor::ints({}, {static_cast<int64_t>(c.sequence(0).size())}));
}

// ConcatFromSequence(seq; axis, new_axis): Concat, of the elements each unsqueezed at `axis`
// when new_axis (stacking).
void map_concat_from_sequence(NodeContext& c) {
  const std::vector<ImportedValue>& elements = c.sequence(0);
  if (elements.empty()) c.fail("concatenates an empty sequence");
  if (!c.has_attr("axis")) c.fail("attribute 'axis' is required");
  const bool new_axis = c.attr_int("new_axis", 0) != 0;
  const int64_t axis = c.attr_int("axis", 0);
  int64_t concat_axis = axis;  // stacking: the new axis, counted from the front
  std::vector<ImportedValue> parts;
  for (const ImportedValue& e : elements) {
    if (e.sequence) c.fail("holds a sequence as an element; it concatenates tensors");
    if (!new_axis) {
      parts.push_back(e);
      continue;
    }
    const size_t rank = e.constant ? e.constant->shape.size() : c.value_shape(e.id).size();
    concat_axis = normalize_axis(c, axis, rank + 1);  // the stacked result's axis
    parts.push_back(with_axes(c, "Unsqueeze", e, concat_axis));
  }
  onnx::NodeProto concat;
  concat.set_op_type("Concat");
  *concat.add_attribute() = onnx::MakeAttribute("axis", concat_axis);
  c.set_output_value(0, c.import_composed(concat, parts, 1)[0]);
}

// SplitToSequence(input, split?; axis, keepdims): pieces of the sizes `split` lists, or of size
// `split` (a scalar, 1 when absent; the last piece may be smaller). keepdims 0 drops the axis
// unless `split` lists sizes, as ONNX Runtime reads it (PyTorch's `unbind` writes split = 1).
void map_split_to_sequence(NodeContext& c) {
  const ir::Shape shape = c.shape(0);
  if (shape.empty()) c.fail("input 0 is a scalar; it has no axis to split");
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), shape.size());
  const int64_t length = shape[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!c.has_input(1) || c.constant(1).shape.empty()) {
    const int64_t size = c.has_input(1) ? c.constant(1).integer(0) : 1;
    if (size < 1) c.fail("'split' (input 1) is " + std::to_string(size) + "; it must be >= 1");
    squeeze = c.attr_int("keepdims", 1) == 0;
    if (squeeze && size != 1) {
      c.fail("keepdims = 0 drops the split axis, which needs pieces of size 1; 'split' is " +
             std::to_string(size));
    }
    for (int64_t at = 0; at < length; at += size) sizes.push_back(std::min(size, length - at));
  } else {
    const HostTensor& split = c.constant(1);
    if (split.shape.size() > 1) c.fail("'split' (input 1) must be a scalar or 1-D");
    {
      int64_t total = 0;
      for (int64_t k = 0; k < split.numel(); ++k) {
        const int64_t size = split.integer(k);
        if (size < 0 || size > length)
          c.fail("'split' (input 1) holds " + std::to_string(size) + " for an axis of " +
                 std::to_string(length));
        sizes.push_back(size);
        total += size;
      }
      if (total != length) {
        c.fail("'split' (input 1) sums to " + std::to_string(total) + "; axis " +
               std::to_string(axis) + " has length " + std::to_string(length));
      }
    }
  }
  const ImportedValue data = c.input(0);
  std::vector<ImportedValue> pieces;
  int64_t start = 0;
  for (const int64_t size : sizes) {
    if (size == 0) c.fail("'split' holds a piece of size 0 (cuvil has no empty tensors)");
    onnx::NodeProto slice;
    slice.set_op_type("Slice");
    ImportedValue piece = c.import_composed(
        slice, {data, one_int(start), one_int(start + size), one_int(axis)}, 1)[0];
    pieces.push_back(squeeze ? with_axes(c, "Squeeze", piece, axis) : piece);
    start += size;
  }
  c.set_sequence_output(0, std::move(pieces));
}

}  // namespace

void add_sequence_mappings(std::vector<OpMapping>& t) {
  // Sequences live only in the importer: every op here decides at import, constant or not.
  t.push_back({"SequenceEmpty", map_sequence_empty, nullptr});
  t.push_back({"SequenceConstruct", map_sequence_construct, nullptr});
  t.push_back({"SequenceInsert", map_sequence_insert, nullptr});
  t.push_back({"SequenceErase", map_sequence_erase, nullptr});
  t.push_back({"SequenceAt", map_sequence_at, nullptr});
  t.push_back({"SequenceLength", map_sequence_length, nullptr});
  t.push_back({"ConcatFromSequence", map_concat_from_sequence, nullptr});
  t.push_back({"SplitToSequence", map_split_to_sequence, nullptr});
}

}  // namespace cuvil::bench::onnx_import
