// Ops that compute with positions along an axis at run time: ArgMax, ArgMin, Hardmax and TopK
// (CLIP's text encoder pools at the argmax of its token ids; classifiers and routers return top-k),
// GatherElements (torch.gather), GatherND, ScatterElements and ScatterND at run-time indices,
// MaxUnpool, ReverseSequence, Compress and OneHot. They are written with the IR's reductions,
// comparisons, gathers, scatter and integer arithmetic. The first maximum along an axis of length
// L is L - max_i(hit_i * (L - i)), where hit_i is 1 where x_i equals the maximum (or is NaN:
// PyTorch ranks NaN above every number, and the IR's reduce_max propagates it). Positions are i32
// values, exact in fp32 below 2^24.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"
#include "bench_suite/models/onnx/window_attrs.h"
#include "runtime/index_check.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;

// TopK runs one round of max per result along the axis; beyond this k the rounds would cost more
// than a sort, which the IR does not have.
constexpr int64_t kMaxTopK = 64;

struct AxisIndexer {
  NodeContext& c;
  ir::Shape shape;  // the input's
  int64_t axis;
  int64_t length;

  AxisIndexer(NodeContext& node, int64_t axis_attr) : AxisIndexer(node, node.shape(0), axis_attr) {}
  // Along an axis of a value of `value_shape` (input 0 read as another shape).
  AxisIndexer(NodeContext& node, ir::Shape value_shape, int64_t axis_attr)
      : c(node),
        shape(std::move(value_shape)),
        axis(normalize_axis(node, axis_attr, shape.size())) {
    length = shape[static_cast<size_t>(axis)];
    if (length > kMaxExactInteger) {
      c.fail("axis " + std::to_string(axis) + " has " + std::to_string(length) +
             " positions; indices above 2^24 are not exact in fp32 storage");
    }
  }

  // An integer constant of f(i) for each position i of the axis, shaped to broadcast along it.
  template <class F>
  ir::ValueId per_position(F f, const std::string& name) {
    ir::Shape s(shape.size() - static_cast<size_t>(axis), 1);
    s[0] = length;
    std::vector<int64_t> v(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i) v[static_cast<size_t>(i)] = f(i);
    return c.constant_value(HostTensor::ints(s, v), name);
  }
  ir::Attrs reduce_attrs(bool keep) const {
    return {{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{keep ? 1 : 0}}};
  }
  ir::ValueId max_along(ir::ValueId x, bool keep, const std::string& name) {
    return c.add(OpKind::reduce_max, {x}, reduce_attrs(keep), name);
  }

  // The position of the first (or last) element of x equal to `max` (x's maximum along the axis,
  // kept as a dimension of 1); `available` (i32 0/1, or kNoValue) leaves out taken positions.
  ir::ValueId position_of(ir::ValueId x, ir::ValueId max, bool last, bool keep,
                          ir::ValueId available, const std::string& tag) {
    ir::ValueId hit = c.compare(x, "equal", max, tag + "hit");
    if (c.graph().value(x).dtype != ir::DType::i32) {
      const ir::ValueId nan = c.compare(x, "not_equal", x, tag + "nan");
      hit = c.add(OpKind::max, {hit, nan}, {}, tag + "hit_or_nan");
    }
    if (available != ir::kNoValue) hit = c.add(OpKind::mul, {hit, available}, {}, tag + "free");
    // First: weights L - i, the largest where i is smallest; last: i + 1.
    const int64_t n = length;
    const ir::ValueId weight = last
                                   ? per_position([](int64_t i) { return i + 1; }, tag + "after")
                                   : per_position([n](int64_t i) { return n - i; }, tag + "before");
    const ir::ValueId best =
        max_along(c.add(OpKind::mul, {hit, weight}, {}, tag + "score"), keep, tag + "best");
    return last ? c.add(OpKind::sub, {best, c.integer_constant(1, tag + "one")}, {}, tag)
                : c.add(OpKind::sub, {c.integer_constant(n, tag + "length"), best}, {}, tag);
  }
};

// ArgMax, ArgMin: axis (default 0), keepdims (1), select_last_index (0, opset 12).
void map_arg_reduce(NodeContext& c) {
  AxisIndexer ax(c, c.attr_int("axis", 0));
  const bool keep = c.attr_int("keepdims", 1) != 0;
  const bool last = c.attr_int("select_last_index", 0) != 0;
  ir::ValueId x = c.value(0);
  if (c.op_type() == "ArgMin") x = c.add(OpKind::neg, {x}, {}, "neg");
  const ir::ValueId max = ax.max_along(x, true, "max");
  c.set_output(0, ax.position_of(x, max, last, keep, ir::kNoValue, ""));
}

// Hardmax(x; axis): 1 at the first maximum along the axis, 0 elsewhere. From opset 13 along one
// axis (default -1); before, x is read as 2-D [prod(d < axis), prod(d >= axis)] (axis default 1)
// and the maximum taken along its rows.
void map_hardmax(NodeContext& c) {
  if (c.is_integer(0)) c.fail("needs a float input, not integers");
  const ir::Shape xs = c.shape(0);
  ir::ValueId x = c.value(0);
  ir::Shape shape = xs;
  int64_t axis = c.attr_int("axis", c.opset() >= 13 ? -1 : 1);
  if (c.opset() < 13) {
    const int64_t rank = static_cast<int64_t>(xs.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank)  // the rank itself reads x as [n, 1]
      c.fail("axis " + std::to_string(c.attr_int("axis", 1)) + " is outside [-" +
             std::to_string(rank) + ", " + std::to_string(rank) + "]");
    int64_t rows = 1, cols = 1;
    for (size_t d = 0; d < xs.size(); ++d) (static_cast<int64_t>(d) < axis ? rows : cols) *= xs[d];
    shape = {rows, cols};
    x = c.add(OpKind::reshape, {x}, {{"shape", shape}}, "rows");
    axis = 1;
  }
  AxisIndexer ax(c, shape, axis);
  const ir::ValueId at =
      ax.position_of(x, ax.max_along(x, true, "max"), false, true, ir::kNoValue, "first");
  const ir::ValueId positions = ax.per_position([](int64_t i) { return i; }, "positions");
  ir::ValueId y = c.add(OpKind::cast, {c.compare(positions, "equal", at, "is_first")},
                        {{"dtype", std::string("f32")}}, c.opset() < 13 ? "hardmax" : "");
  if (c.opset() < 13) y = c.add(OpKind::reshape, {y}, {{"shape", xs}});
  c.set_output(0, y);
}

// TopK: k from input 1 (opset 10) or attr k; axis (-1), largest (1), sorted (1; the results are
// always sorted, which ONNX allows for 0). Round r takes the maximum of what earlier rounds left
// and its first position; equal values come out in index order, as ONNX requires.
void map_top_k(NodeContext& c) {
  AxisIndexer ax(c, c.attr_int("axis", -1));
  const int64_t k = c.opset() >= 10 ? c.constant(1).integer(0) : c.attr_int("k", 0);
  if (k < 1 || k > ax.length)
    c.fail("k is " + std::to_string(k) + " for an axis of " + std::to_string(ax.length));
  if (k > kMaxTopK) {
    c.fail("k is " + std::to_string(k) + "; at most " + std::to_string(kMaxTopK) +
           " is supported (each result is one round of max)");
  }
  const bool largest = c.attr_int("largest", 1) != 0;
  const bool integers = c.is_integer(0);
  ir::ValueId x = c.value(0);
  if (!largest) x = c.add(OpKind::neg, {x}, {}, "neg");
  // What a taken position is replaced with: no larger than any value of the input's kind (the
  // availability mask keeps taken positions out where untaken ones tie with it).
  const ir::ValueId floor = integers ? c.integer_constant(-kMaxExactInteger, "lowest")
                                     : c.float_constant(-INFINITY, "lowest");
  const ir::ValueId positions = ax.per_position([](int64_t i) { return i; }, "positions");
  ir::ValueId available = ir::kNoValue;
  std::vector<ir::ValueId> values, indices;
  for (int64_t r = 0; r < k; ++r) {
    // (Appended, not "r" + to_string(r): GCC 12 warns falsely on that concatenation.)
    std::string tag = "r";
    tag += std::to_string(r);
    tag += '_';
    const ir::ValueId max = ax.max_along(x, true, tag + "max");
    const ir::ValueId at = ax.position_of(x, max, false, true, available, tag + "at");
    values.push_back(largest ? max : c.add(OpKind::neg, {max}, {}, tag + "value"));
    indices.push_back(at);
    if (r + 1 == k) break;
    const ir::ValueId taken = c.compare(positions, "equal", at, tag + "taken");
    const ir::ValueId free_now =
        c.add(OpKind::sub, {c.integer_constant(1, tag + "one"), taken}, {}, tag + "free_now");
    available = available == ir::kNoValue
                    ? free_now
                    : c.add(OpKind::mul, {available, free_now}, {}, tag + "available");
    x = c.add(OpKind::where, {taken, floor, x}, {}, tag + "rest");
  }
  auto join = [&](const std::vector<ir::ValueId>& parts, const std::string& name) {
    return parts.size() == 1 ? parts[0] : c.add(OpKind::concat, parts, {{"axis", ax.axis}}, name);
  };
  if (c.output_used(0)) c.set_output(0, join(values, "values"));
  if (c.output_used(1)) c.set_output(1, join(indices, "indices"));
}

}  // namespace

// Run-time indices with the negative ones counted from the end of an axis of `size`.
ir::ValueId from_the_end(NodeContext& c, ir::ValueId idx, int64_t size) {
  const ir::ValueId negative = c.compare(idx, "less", c.integer_constant(0, "zero"), "negative");
  return c.add(OpKind::add,
               {idx, c.add(OpKind::mul, {negative, c.integer_constant(size, "size")}, {}, "wrap")},
               {}, "wrapped");
}

namespace {

// 1 where a run-time integer lies in [lo, hi), else 0.
ir::ValueId in_interval(NodeContext& c, ir::ValueId v, int64_t lo, int64_t hi,
                        const std::string& tag) {
  return c.add(
      OpKind::mul,
      {c.compare(v, "greater_equal", c.integer_constant(lo, tag + "lowest"), tag + "above"),
       c.compare(v, "less", c.integer_constant(hi, tag + "bound"), tag + "below")},
      {}, tag + "in_range");
}

// 1 where a run-time index lies in [-size, size) (an index ONNX accepts), else 0.
ir::ValueId index_in_range(NodeContext& c, ir::ValueId idx, int64_t size, const std::string& tag) {
  return in_interval(c, idx, -size, size, tag);
}

// Positions where `valid` holds, else runtime::kOutsidePosition: the gather or scatter
// kernel's range check then reports the index at that position, naming the node.
ir::ValueId checked_positions(NodeContext& c, ir::ValueId valid, ir::ValueId positions) {
  const ir::ValueId outside = c.integer_constant(runtime::kOutsidePosition, "outside");
  return c.add(OpKind::where, {valid, positions, outside}, {}, "checked");
}

// The flat positions (indices' shape) in the flattened data that GatherElements reads and
// ScatterElements writes: element p's, with its axis coordinate replaced by indices[p], is a
// constant part (the other coordinates) plus the index times the axis's stride. Constant indices
// fold that at import (and are checked there); run-time ones compute it, with negative indices
// counted from the end and any index outside [-size, size) sent past the data, where the gather
// or scatter kernel reports it naming the node.
ir::ValueId element_flat_positions(NodeContext& c, const ir::Shape& ds, int64_t axis) {
  const ir::Shape is = c.shape(1);
  const ElementPositions p = element_positions(c, ds, is, axis);
  const int64_t numel = ir::num_elements(ds);
  if (numel > kMaxExactInteger)
    c.fail("data of " + std::to_string(numel) + " elements: flat positions above 2^24 are not " +
           "exact in fp32 storage");
  if (ir::num_elements(is) > kMaxFoldedElements)
    c.fail("indices of " + ir::to_string(is) + " are larger than 2^27 elements");
  if (c.is_constant(1) ? c.constant(1).is_float() : !c.is_integer(1))
    c.fail("indices must be integers");
  if (c.is_constant(1)) {
    std::vector<int64_t> ids = c.constant(1).to_ints();
    for (size_t k = 0; k < ids.size(); ++k)
      ids[k] = p.base[k] + checked_index(c, ids[k], p.axis_size) * p.axis_stride;
    return c.constant_value(HostTensor::ints(is, ids), "positions");
  }
  const ir::ValueId idx = c.value(1);
  const int64_t size = p.axis_size;
  const ir::ValueId in_range = index_in_range(c, idx, size, "");
  const ir::ValueId flat = c.add(
      OpKind::add,
      {c.add(OpKind::mul, {from_the_end(c, idx, size), c.integer_constant(p.axis_stride, "stride")},
             {}, "scaled"),
       c.constant_value(HostTensor::ints(is, p.base), "base")},
      {}, "flat_positions");
  return checked_positions(c, in_range, flat);
}

// GatherND's and ScatterND's view of the data: each index tuple along the last axis of indices
// (k long) names the slice data[batch..., i_0, ..., i_{k-1}, ...], which is one row of the data
// flattened to `flat_shape` = [B * P, rest...] (B: the product of the batch axes, P of the k
// indexed ones): its batch's first row plus sum_j i_j * stride_j. `rows` has the tuples' shape
// (indices' without the last axis); constant or computed and checked as element_flat_positions.
struct TupleRows {
  ir::Shape flat_shape;
  ir::Shape tuple_shape;
  ir::ValueId rows = ir::kNoValue;
};

TupleRows tuple_rows(NodeContext& c, const ir::Shape& ds, int64_t b) {
  const ir::Shape is = c.shape(1);
  const int64_t r = static_cast<int64_t>(ds.size()), q = static_cast<int64_t>(is.size());
  if (q < 1) c.fail("indices must have at least one axis");
  if (b < 0 || b >= std::min(r, q))
    c.fail("batch_dims " + std::to_string(b) + " must be below the ranks of data (" +
           std::to_string(r) + ") and indices (" + std::to_string(q) + ")");
  for (int64_t j = 0; j < b; ++j) {
    if (ds[static_cast<size_t>(j)] != is[static_cast<size_t>(j)])
      c.fail("batch axis " + std::to_string(j) + ": data has " +
             std::to_string(ds[static_cast<size_t>(j)]) + ", indices " +
             std::to_string(is[static_cast<size_t>(j)]));
  }
  const int64_t k = is.back();
  if (k < 1 || k > r - b)
    c.fail("index tuples of " + std::to_string(k) + " entries for data of rank " +
           std::to_string(r) + " with " + std::to_string(b) + " batch axes (1 to " +
           std::to_string(r - b) + ")");
  if (c.is_constant(1) ? c.constant(1).is_float() : !c.is_integer(1))
    c.fail("indices must be integers");
  int64_t batches = 1, rows_per_batch = 1;
  for (int64_t j = 0; j < b; ++j) batches *= ds[static_cast<size_t>(j)];
  std::vector<int64_t> strides(static_cast<size_t>(k), 1);
  for (int64_t j = k - 1; j >= 0; --j) {
    strides[static_cast<size_t>(j)] = rows_per_batch;
    rows_per_batch *= ds[static_cast<size_t>(b + j)];
  }
  const int64_t rows = batches * rows_per_batch;
  if (rows > kMaxExactInteger)
    c.fail("data of " + std::to_string(rows) + " indexed rows: row positions above 2^24 are not " +
           "exact in fp32 storage");
  TupleRows t;
  t.tuple_shape = ir::Shape(is.begin(), is.end() - 1);
  const int64_t tuples = ir::num_elements(t.tuple_shape);
  if (tuples * k > kMaxFoldedElements)
    c.fail("indices of " + ir::to_string(is) + " are larger than 2^27 elements");
  t.flat_shape = {rows};
  t.flat_shape.insert(t.flat_shape.end(), ds.begin() + b + k, ds.end());
  // Tuples run batch-major (indices' batch axes are data's): tuple t is in batch t / per_batch.
  const int64_t per_batch = tuples / batches;
  std::vector<int64_t> first_rows(static_cast<size_t>(tuples));
  for (int64_t i = 0; i < tuples; ++i)
    first_rows[static_cast<size_t>(i)] = i / per_batch * rows_per_batch;
  if (c.is_constant(1)) {
    const std::vector<int64_t> ids = c.constant(1).to_ints();
    std::vector<int64_t> positions = first_rows;
    for (int64_t i = 0; i < tuples; ++i) {
      for (int64_t j = 0; j < k; ++j) {
        const int64_t size = ds[static_cast<size_t>(b + j)];
        positions[static_cast<size_t>(i)] +=
            checked_index(c, ids[static_cast<size_t>(i * k + j)], size) *
            strides[static_cast<size_t>(j)];
      }
    }
    t.rows = c.constant_value(HostTensor::ints(t.tuple_shape, positions), "rows");
    return t;
  }
  ir::ValueId flat = c.constant_value(HostTensor::ints(t.tuple_shape, first_rows), "first_rows");
  ir::ValueId in_range = ir::kNoValue;
  for (int64_t j = 0; j < k; ++j) {
    // Appended, not concatenated: GCC 12 warns falsely (-Wstringop-overflow) on "i" + s + "_".
    std::string tag = std::to_string(j);
    tag.insert(0, 1, 'i');
    tag += '_';
    const int64_t size = ds[static_cast<size_t>(b + j)];
    const ir::ValueId idx =
        c.add(OpKind::reshape,
              {c.add(OpKind::slice, {c.value(1)}, {{"axis", q - 1}, {"start", j}, {"end", j + 1}},
                     tag + "entry")},
              {{"shape", t.tuple_shape}}, tag + "tuple_shaped");
    const ir::ValueId inside = index_in_range(c, idx, size, tag);
    in_range =
        in_range == ir::kNoValue ? inside : c.add(OpKind::mul, {in_range, inside}, {}, tag + "all");
    const ir::ValueId scaled =
        c.add(OpKind::mul,
              {from_the_end(c, idx, size),
               c.integer_constant(strides[static_cast<size_t>(j)], tag + "stride")},
              {}, tag + "scaled");
    flat = c.add(OpKind::add, {flat, scaled}, {}, tag + "row");
  }
  t.rows = checked_positions(c, in_range, flat);
  return t;
}

}  // namespace

// GatherElements: out[p] = data[p with its axis coordinate replaced by indices[p]]: one gather
// from the flattened data at element_flat_positions.
void map_gather_elements(NodeContext& c) {
  const ir::Shape ds = c.shape(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), ds.size());
  const ir::ValueId positions = element_flat_positions(c, ds, axis);
  const ir::ValueId flat_data =
      c.add(OpKind::reshape, {c.value(0)}, {{"shape", ir::Shape{ir::num_elements(ds)}}}, "flat");
  c.set_output(0, c.add(OpKind::gather, {flat_data, positions}, {{"axis", int64_t{0}}}));
}

// GatherND (TensorFlow converters' gather_nd, batch_dims too): one gather along axis 0 of the
// data flattened by tuple_rows, at the row of each tuple.
void map_gather_nd(NodeContext& c) {
  const ir::Shape ds = c.shape(0);
  const TupleRows t = tuple_rows(c, ds, c.attr_int("batch_dims", 0));
  const ir::ValueId flat_data =
      c.add(OpKind::reshape, {c.value(0)}, {{"shape", t.flat_shape}}, "flat");
  c.set_output(0, c.add(OpKind::gather, {flat_data, t.rows}, {{"axis", int64_t{0}}}));
}

// ScatterElements (torch.scatter, scatter_add, scatter_reduce) and ScatterND (index_put, a KV
// cache written at run-time positions) with run-time indices: the IR's scatter along axis 0 of
// the data flattened as the gathers read it, at the same positions, with the updates flattened
// to match. Indices outside the data are an error naming the node at run time.
void map_scatter_at_run_time(NodeContext& c, std::optional<ir::OpKind> combine) {
  const ir::Shape ds = c.shape(0), us = c.shape(2);
  // The IR's reductions are named as the binary ops that combine.
  const std::string reduction = combine ? std::string(ir::to_string(*combine)) : "none";
  ir::ValueId positions = ir::kNoValue;
  ir::Shape flat_shape;
  if (c.op_type() == "ScatterND") {
    const TupleRows t = tuple_rows(c, ds, 0);
    ir::Shape want = t.tuple_shape;
    want.insert(want.end(), t.flat_shape.begin() + 1, t.flat_shape.end());
    if (us != want)
      c.fail("updates have shape " + ir::to_string(us) + ", expected " + ir::to_string(want));
    flat_shape = t.flat_shape;
    positions = c.add(OpKind::reshape, {t.rows},
                      {{"shape", ir::Shape{ir::num_elements(t.tuple_shape)}}}, "rows");
  } else {
    if (us != c.shape(1))
      c.fail("updates have shape " + ir::to_string(us) + ", indices " + ir::to_string(c.shape(1)));
    const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), ds.size());
    positions = c.add(OpKind::reshape, {element_flat_positions(c, ds, axis)},
                      {{"shape", ir::Shape{ir::num_elements(us)}}}, "positions");
    flat_shape = {ir::num_elements(ds)};
  }
  ir::Shape flat_updates = flat_shape;
  flat_updates[0] = c.value_shape(positions)[0];
  const ir::ValueId data = c.add(OpKind::reshape, {c.value(0)}, {{"shape", flat_shape}}, "flat");
  const ir::ValueId updates =
      c.add(OpKind::reshape, {c.value(2)}, {{"shape", flat_updates}}, "flat_updates");
  const ir::ValueId y = c.add(OpKind::scatter, {data, positions, updates},
                              {{"axis", int64_t{0}}, {"reduction", reduction}});
  c.set_output(0, c.add(OpKind::reshape, {y}, {{"shape", ds}}, "shaped"));
}

// MaxUnpool (SegNet's decoder): zeros of the output's shape with each input element written at
// its index in the flattened output (MaxPool's Indices: batch and channel included), as one
// scatter. The output's spatial size is (in - 1) * stride + kernel - pads, or output_shape's
// (constant) where given. An index outside the output is an error naming the node at run time.
void map_max_unpool(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  if (xs.size() < 3) c.fail("input must have rank >= 3 (N, C and spatial axes)");
  if (c.shape(1) != xs)
    c.fail("indices have shape " + ir::to_string(c.shape(1)) + ", the input " + ir::to_string(xs));
  if (c.is_constant(1) ? c.constant(1).is_float() : !c.is_integer(1))
    c.fail("indices must be integers");
  const size_t r = xs.size() - 2;
  // The window attributes as pools check them (window_attrs.h: >= 1, at most 2^31; MaxUnpool
  // has no auto_pad, so its pads are read as given), and the input's extent times the stride
  // within 2^40 as ConvTranspose's: the output size below then cannot overflow.
  const std::vector<int64_t> kernel = kernel_shape_attr(c, r);
  const std::vector<int64_t> strides = per_axis_attr(c, "strides", r);
  const Padding pads = spatial_padding(c, ir::Shape(xs.begin() + 2, xs.end()), kernel, strides);
  ir::Shape ys(xs.begin(), xs.begin() + 2);
  for (size_t d = 0; d < r; ++d) {
    if (xs[d + 2] - 1 > kMaxElements / strides[d])
      c.fail("the output would have more than 2^40 elements along an axis");
    ys.push_back((xs[d + 2] - 1) * strides[d] + kernel[d] - pads.begin[d] - pads.end[d]);
  }
  if (c.has_input(2)) {
    if (!c.is_constant(2)) c.fail("output_shape must be a constant");
    const std::vector<int64_t> given = c.constant(2).to_ints();
    if (given.size() != xs.size() || given[0] != xs[0] || given[1] != xs[1])
      c.fail("output_shape " + ir::to_string(given) + " must keep the input's N and C (" +
             ir::to_string(xs) + ")");
    ys = given;
  }
  for (int64_t d : ys) {
    if (d < 1) c.fail("output shape " + ir::to_string(ys) + " has an axis below 1");
  }
  const int64_t n = ir::bounded_elements(ys), m = ir::num_elements(xs);
  if (n < 0 || n > kMaxExactInteger)
    c.fail("an output of " + ir::to_string(ys) + ": positions above 2^24 are not exact in fp32 " +
           "storage");
  // ONNX's indices are never negative: send those past the output too, so the kernel names them.
  const ir::ValueId flat_idx =
      c.add(OpKind::reshape, {c.value(1)}, {{"shape", ir::Shape{m}}}, "flat_indices");
  const ir::ValueId inside = in_interval(c, flat_idx, 0, n, "");
  const ir::ValueId zeros =
      c.add(OpKind::expand, {c.constant_value(HostTensor::floats({1}, {0.0f}), "zero_value")},
            {{"shape", ir::Shape{n}}}, "zeros");
  const ir::ValueId values =
      c.add(OpKind::reshape, {c.value(0)}, {{"shape", ir::Shape{m}}}, "flat_values");
  const ir::ValueId y =
      c.add(OpKind::scatter, {zeros, checked_positions(c, inside, flat_idx), values},
            {{"axis", int64_t{0}}});
  c.set_output(0, c.add(OpKind::reshape, {y}, {{"shape", ys}}, "shaped"));
}

// ReverseSequence (TensorFlow converters' reverse_sequence, bidirectional recurrences): along the
// time axis, the first sequence_lens[b] steps of each batch entry reversed, the rest kept. One
// gather of rows of the data flattened to [T * B, rest...] (the time and batch axes are 0 and 1,
// either way round) at row(t, b) = src * time_stride + b * batch_stride, where src = len - 1 - t
// for t < len and t after. Constant lengths fold that at import; run-time ones compute it, and a
// length outside [0, T] sends its rows past the data, where the gather kernel names the node.
void map_reverse_sequence(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  if (xs.size() < 2) c.fail("the input needs a time and a batch axis");
  const int64_t time_axis = c.attr_int("time_axis", 0), batch_axis = c.attr_int("batch_axis", 1);
  if (!((time_axis == 0 && batch_axis == 1) || (time_axis == 1 && batch_axis == 0)))
    c.fail("time_axis " + std::to_string(time_axis) + " and batch_axis " +
           std::to_string(batch_axis) + ": they must be 0 and 1, either way round");
  const int64_t steps = xs[static_cast<size_t>(time_axis)];
  const int64_t batch = xs[static_cast<size_t>(batch_axis)];
  if (c.shape(1) != ir::Shape{batch})
    c.fail("sequence_lens of " + ir::to_string(c.shape(1)) + ": one length per batch entry (" +
           std::to_string(batch) + ") is needed");
  if (!c.is_integer(1)) c.fail("sequence_lens must be integers");
  if (steps * batch > kMaxExactInteger)
    c.fail(std::to_string(steps * batch) + " time steps x batch entries: row positions above " +
           "2^24 are not exact in fp32 storage");
  const bool time_first = time_axis == 0;
  const int64_t time_stride = time_first ? batch : 1, batch_stride = time_first ? 1 : steps;
  ir::Shape flat_shape = {steps * batch};
  flat_shape.insert(flat_shape.end(), xs.begin() + 2, xs.end());
  const ir::ValueId flat_data =
      c.add(OpKind::reshape, {c.value(0)}, {{"shape", flat_shape}}, "flat");
  // Positions have the first two axes of the input, so the gather restores its shape.
  const ir::Shape grid = time_first ? ir::Shape{steps, batch} : ir::Shape{batch, steps};
  auto gather_at = [&](ir::ValueId rows) {
    c.set_output(0, c.add(OpKind::gather, {flat_data, rows}, {{"axis", int64_t{0}}}));
  };
  if (c.is_constant(1)) {
    const std::vector<int64_t> lens = c.constant(1).to_ints();
    std::vector<int64_t> rows(static_cast<size_t>(steps * batch));
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      if (len < 0 || len > steps)
        c.fail("sequence_lens[" + std::to_string(b) + "] is " + std::to_string(len) + " (0 to " +
               std::to_string(steps) + ")");
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t src = t < len ? len - 1 - t : t;
        const int64_t at = time_first ? t * batch + b : b * steps + t;
        rows[static_cast<size_t>(at)] = src * time_stride + b * batch_stride;
      }
    }
    return gather_at(c.constant_value(HostTensor::ints(grid, rows), "rows"));
  }
  std::vector<int64_t> times(static_cast<size_t>(steps)), batch_rows(static_cast<size_t>(batch));
  for (int64_t t = 0; t < steps; ++t) times[static_cast<size_t>(t)] = t;
  for (int64_t b = 0; b < batch; ++b) batch_rows[static_cast<size_t>(b)] = b * batch_stride;
  const ir::Shape time_shape = time_first ? ir::Shape{steps, 1} : ir::Shape{1, steps};
  const ir::Shape batch_shape = time_first ? ir::Shape{1, batch} : ir::Shape{batch, 1};
  const ir::ValueId t = c.constant_value(HostTensor::ints(time_shape, times), "times");
  const ir::ValueId len = c.add(OpKind::reshape, {c.value(1)}, {{"shape", batch_shape}}, "lengths");
  const ir::ValueId reversed =
      c.add(OpKind::sub, {c.add(OpKind::sub, {len, c.integer_constant(1, "one")}, {}, "last"), t},
            {}, "reversed");
  const ir::ValueId src =
      c.add(OpKind::where, {c.compare(t, "less", len, "inside"), reversed, t}, {}, "source");
  const ir::ValueId rows = c.add(
      OpKind::add,
      {c.add(OpKind::mul, {src, c.integer_constant(time_stride, "time_stride")}, {}, "time_rows"),
       c.constant_value(HostTensor::ints(batch_shape, batch_rows), "batch_rows")},
      {}, "rows");
  gather_at(checked_positions(c, in_interval(c, len, 0, steps + 1, ""), rows));
}

// Compress with a constant condition: the positions where it holds, gathered along `axis` (from
// the flattened input without one); a condition shorter than the axis drops the rest. A run-time
// condition would make the output's shape depend on values: refused.
void map_compress(NodeContext& c) {
  if (!c.is_constant(1))
    c.fail("a run-time condition is not supported (the output's shape would depend on it)");
  const HostTensor& condition = c.constant(1);
  if (condition.shape.size() != 1) c.fail("condition must have one axis");
  const ir::Shape xs = c.shape(0);
  ir::ValueId x = c.value(0);
  int64_t axis = 0, length = ir::num_elements(xs);
  if (c.has_attr("axis")) {
    axis = normalize_axis(c, c.attr_int("axis", 0), xs.size());
    length = xs[static_cast<size_t>(axis)];
  } else {
    x = c.add(OpKind::reshape, {x}, {{"shape", ir::Shape{length}}}, "flat");
  }
  const std::vector<int64_t> keep = condition.to_ints();
  if (static_cast<int64_t>(keep.size()) > length)
    c.fail("condition of " + std::to_string(keep.size()) + " entries for " +
           std::to_string(length) + " slices");
  std::vector<int64_t> positions;
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i] != 0) positions.push_back(static_cast<int64_t>(i));
  if (positions.empty()) c.fail("the condition selects nothing (an empty output)");
  const int64_t n = static_cast<int64_t>(positions.size());
  c.set_output(
      0, c.add(OpKind::gather, {x, c.constant_value(HostTensor::ints({n}, positions), "positions")},
               {{"axis", axis}}));
}

// OneHot(indices, depth, values = [off, on]), attr axis (-1: a new last axis): on where the new
// axis's position equals the index (negative indices count from the end), off elsewhere; an
// index outside [-depth, depth) gives a row of off.
void map_one_hot(NodeContext& c) {
  const int64_t depth = c.constant(1).integer(0);
  if (depth < 1 || depth > kMaxExactInteger)
    c.fail("depth is " + std::to_string(depth) + " (1 to 2^24)");
  const HostTensor& values = c.constant(2);
  if (values.numel() != 2) c.fail("values must hold [off, on]");
  if (!c.is_constant(0) && !c.is_integer(0)) c.fail("indices must be integers");
  const ir::Shape is = c.shape(0);
  const int64_t rank = static_cast<int64_t>(is.size()) + 1;
  int64_t axis = c.attr_int("axis", -1);
  if (axis < -rank || axis >= rank)
    c.fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  // indices with a 1 at the new axis, against positions 0 .. depth - 1 along it.
  ir::Shape unsqueezed = is;
  unsqueezed.insert(unsqueezed.begin() + axis, 1);
  const ir::ValueId idx = from_the_end(
      c, c.add(OpKind::reshape, {c.value(0)}, {{"shape", unsqueezed}}, "unsqueezed"), depth);
  ir::Shape along(static_cast<size_t>(rank - axis), 1);
  along[0] = depth;
  std::vector<int64_t> positions(static_cast<size_t>(depth));
  for (int64_t i = 0; i < depth; ++i) positions[static_cast<size_t>(i)] = i;
  const ir::ValueId hit = c.compare(
      idx, "equal", c.constant_value(HostTensor::ints(along, positions), "positions"), "hit");
  auto value = [&](int64_t k, const std::string& name) {
    return values.is_float() ? c.float_constant(values.f[static_cast<size_t>(k)], name)
                             : c.integer_constant(values.i[static_cast<size_t>(k)], name);
  };
  c.set_output(0, c.add(OpKind::where, {hit, value(1, "on"), value(0, "off")}));
}

void add_index_mappings(std::vector<OpMapping>& t) {
  t.push_back({"ArgMax", map_arg_reduce, nullptr});
  t.push_back({"ArgMin", map_arg_reduce, nullptr});
  t.push_back({"TopK", map_top_k, nullptr});
  t.push_back({"Hardmax", map_hardmax, nullptr});
  t.push_back({"GatherElements", map_gather_elements, nullptr});
  t.push_back({"GatherND", map_gather_nd, nullptr});
  t.push_back({"ReverseSequence", map_reverse_sequence, nullptr});
  t.push_back({"Compress", map_compress, nullptr});
  t.push_back({"OneHot", map_one_hot, nullptr});
  t.push_back({"MaxUnpool", map_max_unpool, nullptr});
}

}  // namespace cuvil::bench::onnx_import
