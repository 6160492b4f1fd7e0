// Shape and data-movement operators: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
// Split, Slice, Gather, Expand, Pad, Tile, ScatterND, ScatterElements, and the constant producers
// (Constant, ConstantOfShape, EyeLike, Shape, Size, Range, Identity, Dropout). Each folds on
// constants. DepthToSpace and SpaceToDepth run at run time only.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "base/error.h"
#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"
#include "bench_suite/models/onnx/window_attrs.h"

namespace cuvil::bench::onnx_import {

namespace {

// Run-time updates at constant indices are gathered into place, one data-sized gather per repeat
// of a target; past this many repeats (scatter_add of a long edge list) the IR's scatter runs them.
constexpr size_t kMaxScatterLayers = 16;

using ir::OpKind;

// An operand that is an attribute before `opset_as_input` and an optional input from then on.
std::vector<int64_t> ints_arg(NodeContext& c, const char* attr, size_t input,
                              int64_t opset_as_input, std::vector<int64_t> fallback = {}) {
  if (c.opset() < opset_as_input) return c.attr_ints(attr, fallback);
  if (!c.has_input(input)) return fallback;
  return c.constant(input).to_ints();
}

// Output k is input i, whatever it is (constant or IR value).
void alias(NodeContext& c, size_t k, size_t i) {
  c.set_output_value(k, c.input(i));  // a tensor or a sequence (Identity in a loop body)
}

// Reshapes input 0 to `shape`: folded when constant, an IR reshape otherwise.
void reshape_to(NodeContext& c, const ir::Shape& shape) {
  if (c.is_constant(0)) return c.set_constant_output(0, reshaped(c.constant(0), shape));
  if (c.shape(0) == shape) return c.set_output(0, c.value(0));
  c.set_output(0, c.add(OpKind::reshape, {c.value(0)}, {{"shape", shape}}));
}

// ---- Reshape family -------------------------------------------------------------------------

ir::Shape reshape_shape(NodeContext& c) {
  const std::vector<int64_t> spec =
      c.opset() < 5 ? c.attr_ints("shape", {}) : c.constant(1).to_ints();
  return reshape_target(c, c.shape(0), spec, c.attr_int("allowzero", 0) != 0);
}
void map_reshape(NodeContext& c) {
  reshape_to(c, reshape_shape(c));
}
bool fold_reshape(NodeContext& c) {
  map_reshape(c);
  return true;
}

ir::Shape flatten_shape(NodeContext& c) {
  const ir::Shape in = c.shape(0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(in.size());
  if (axis < 0 || axis > static_cast<int64_t>(in.size())) c.fail("axis out of range");
  int64_t a = 1, b = 1;
  for (size_t d = 0; d < in.size(); ++d) (static_cast<int64_t>(d) < axis ? a : b) *= in[d];
  return {a, b};
}
void map_flatten(NodeContext& c) {
  reshape_to(c, flatten_shape(c));
}
bool fold_flatten(NodeContext& c) {
  map_flatten(c);
  return true;
}

ir::Shape squeeze_shape(NodeContext& c) {
  const ir::Shape in = c.shape(0);
  std::vector<int64_t> axes = normalize_axes(c, ints_arg(c, "axes", 1, 13), in.size());
  ir::Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    const bool listed = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (listed && in[d] != 1)
      c.fail("cannot squeeze axis " + std::to_string(d) + " of size " + std::to_string(in[d]));
    if (listed || (axes.empty() && in[d] == 1)) continue;
    out.push_back(in[d]);
  }
  return out;
}
void map_squeeze(NodeContext& c) {
  reshape_to(c, squeeze_shape(c));
}
bool fold_squeeze(NodeContext& c) {
  map_squeeze(c);
  return true;
}

ir::Shape unsqueeze_shape(NodeContext& c) {
  const ir::Shape in = c.shape(0);
  const std::vector<int64_t> raw = ints_arg(c, "axes", 1, 13);
  if (raw.empty()) c.fail("axes are required");
  const size_t rank = in.size() + raw.size();
  std::vector<int64_t> axes = normalize_axes(c, raw, rank);
  ir::Shape out;
  size_t next = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end()) {
      out.push_back(1);
    } else {
      out.push_back(in[next++]);
    }
  }
  return out;
}
void map_unsqueeze(NodeContext& c) {
  reshape_to(c, unsqueeze_shape(c));
}
bool fold_unsqueeze(NodeContext& c) {
  map_unsqueeze(c);
  return true;
}

// ---- Transpose, Concat, Split, Slice ----------------------------------------------------------

std::vector<int64_t> transpose_perm(NodeContext& c) {
  const size_t rank = c.shape(0).size();
  std::vector<int64_t> reversed;
  for (size_t d = rank; d-- > 0;) reversed.push_back(static_cast<int64_t>(d));
  std::vector<int64_t> perm = c.attr_ints("perm", reversed);
  if (perm.size() != rank)
    c.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  return normalize_axes(c, perm, rank);
}
void map_transpose(NodeContext& c) {
  const std::vector<int64_t> perm = transpose_perm(c);
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d)
    identity = identity && perm[d] == static_cast<int64_t>(d);
  if (identity) return alias(c, 0, 0);
  c.set_output(0, c.add(OpKind::transpose, {c.value(0)}, {{"perm", perm}}));
}
bool fold_transpose(NodeContext& c) {
  c.set_constant_output(0, transpose_tensor(c.constant(0), transpose_perm(c)));
  return true;
}

// DepthToSpace (PyTorch's PixelShuffle: super-resolution heads) and SpaceToDepth: a reshape to
// rank 6, a transpose and a reshape back. DepthToSpace's DCR mode takes channels as
// (block row, block column, channel), CRD as (channel, block row, block column).
void map_depth_space(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  if (xs.size() != 4) c.fail("input must be NCHW (rank 4), got rank " + std::to_string(xs.size()));
  const int64_t b = c.attr_int("blocksize", 0);
  if (b < 1 || b > (int64_t{1} << 20)) c.fail("blocksize must be between 1 and 2^20");
  const int64_t n = xs[0], ch = xs[1], h = xs[2], w = xs[3];
  ir::ValueId x = c.value(0);
  ir::Shape split, out;
  std::vector<int64_t> perm;
  if (c.op_type() == "DepthToSpace") {
    if (ch % (b * b) != 0) {
      c.fail("channels " + std::to_string(ch) + " are not a multiple of blocksize^2 " +
             std::to_string(b * b));
    }
    const std::string mode = c.attr_string("mode", "DCR");
    if (mode == "DCR") {
      split = {n, b, b, ch / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (mode == "CRD") {
      split = {n, ch / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      c.fail("unknown mode '" + mode + "' (DCR or CRD)");
    }
    out = {n, ch / (b * b), h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0) {
      c.fail("height " + std::to_string(h) + " and width " + std::to_string(w) +
             " must be multiples of blocksize " + std::to_string(b));
    }
    split = {n, ch, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, ch * b * b, h / b, w / b};
  }
  if (b == 1) return alias(c, 0, 0);
  x = c.add(OpKind::reshape, {x}, {{"shape", split}}, "blocks");
  x = c.add(OpKind::transpose, {x}, {{"perm", perm}}, "move");
  c.set_output(0, c.add(OpKind::reshape, {x}, {{"shape", out}}));
}

int64_t concat_axis(NodeContext& c) {
  return normalize_axis(c, c.attr_int("axis", 0), c.shape(0).size());
}
void map_concat(NodeContext& c) {
  const int64_t axis = concat_axis(c);
  std::vector<ir::ValueId> parts;
  for (size_t i = 0; i < c.input_count(); ++i) {
    if (!c.has_input(i)) continue;
    if (c.shape(i)[static_cast<size_t>(axis)] == 0) continue;  // empty parts add nothing
    parts.push_back(c.value(i));
  }
  if (parts.size() == 1) return c.set_output(0, parts.front());
  c.set_output(0, c.add(OpKind::concat, parts, {{"axis", axis}}));
}
bool fold_concat(NodeContext& c) {
  std::vector<const HostTensor*> parts;
  for (size_t i = 0; i < c.input_count(); ++i) {
    if (c.has_input(i)) parts.push_back(&c.constant(i));
  }
  const int64_t axis = concat_axis(c);
  for (const HostTensor* p : parts) {
    if (p->shape.size() != parts.front()->shape.size()) c.fail("inputs differ in rank");
  }
  c.set_constant_output(0, concat_tensors(parts, axis));
  return true;
}

// The [start, end) of every Split output along the axis.
std::vector<std::pair<int64_t, int64_t>> split_ranges(NodeContext& c, int64_t* axis_out) {
  const ir::Shape in = c.shape(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), in.size());
  *axis_out = axis;
  const int64_t dim = in[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes = ints_arg(c, "split", 1, 13);
  const int64_t outputs = static_cast<int64_t>(c.output_count());
  if (sizes.empty()) {
    const int64_t chunk = (dim + outputs - 1) / outputs;
    for (int64_t k = 0; k < outputs; ++k) sizes.push_back(std::min(chunk, dim - k * chunk));
  }
  if (static_cast<int64_t>(sizes.size()) != outputs) c.fail("split sizes do not match the outputs");
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    if (s <= 0) c.fail("split sizes must be > 0");
    if (s > dim - at) c.fail("split sizes add up to more than the axis's " + std::to_string(dim));
    out.push_back({at, at + s});
    at += s;
  }
  if (at != dim)
    c.fail("split sizes add up to " + std::to_string(at) + ", the axis has " + std::to_string(dim));
  return out;
}
void map_split(NodeContext& c) {
  int64_t axis = 0;
  const auto ranges = split_ranges(c, &axis);
  const ir::ValueId x = c.value(0);
  for (size_t k = 0; k < ranges.size(); ++k) {
    if (!c.output_used(k)) continue;
    c.set_output(k, c.add(OpKind::slice, {x},
                          {{"axis", axis}, {"start", ranges[k].first}, {"end", ranges[k].second}},
                          "out" + std::to_string(k)));
  }
}
bool fold_split(NodeContext& c) {
  int64_t axis = 0;
  const auto ranges = split_ranges(c, &axis);
  for (size_t k = 0; k < ranges.size(); ++k) {
    c.set_constant_output(k,
                          slice_tensor(c.constant(0), {{axis, ranges[k].first, ranges[k].second}}));
  }
  return true;
}

std::vector<AxisSlice> slice_args(NodeContext& c) {
  if (c.opset() < 10) {
    return slice_ranges(c, c.shape(0), c.attr_ints("starts", {}), c.attr_ints("ends", {}),
                        c.attr_ints("axes", {}), {});
  }
  return slice_ranges(c, c.shape(0), c.constant(1).to_ints(), c.constant(2).to_ints(),
                      c.has_input(3) ? c.constant(3).to_ints() : std::vector<int64_t>{},
                      c.has_input(4) ? c.constant(4).to_ints() : std::vector<int64_t>{});
}
void map_slice(NodeContext& c) {
  const std::vector<AxisSlice> ranges = slice_args(c);
  ir::ValueId x = c.value(0);
  int part = 0;
  for (const AxisSlice& r : ranges) {
    if (r.size() == 0) c.fail("slice of axis " + std::to_string(r.axis) + " is empty");
    if (r.step != 1) {
      // A strided or reversed slice (x[:, ::2] in Swin's patch merging, flips) gathers the
      // picked positions.
      std::vector<int64_t> ids;
      for (int64_t k = 0; k < r.size(); ++k) ids.push_back(r.start + k * r.step);
      const ir::ValueId indices =
          c.constant_value(HostTensor::ints({static_cast<int64_t>(ids.size())}, ids),
                           "indices" + std::to_string(part));
      x = c.add(OpKind::gather, {x, indices}, {{"axis", r.axis}},
                part++ ? "axis" + std::to_string(r.axis) : "");
      continue;
    }
    if (r.start == 0 && r.end == c.value_shape(x)[static_cast<size_t>(r.axis)]) continue;
    x = c.add(OpKind::slice, {x}, {{"axis", r.axis}, {"start", r.start}, {"end", r.end}},
              part++ ? "axis" + std::to_string(r.axis) : "");
  }
  c.set_output(0, x);
}
bool fold_slice(NodeContext& c) {
  c.set_constant_output(0, slice_tensor(c.constant(0), slice_args(c)));
  return true;
}

// ---- Gather, Expand, Pad, Tile -------------------------------------------------------------

void map_gather(NodeContext& c) {
  const ir::Shape data = c.shape(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), data.size());
  if (c.is_constant(1)) {
    const HostTensor& idx = c.constant(1);
    const int64_t size = data[static_cast<size_t>(axis)];
    // A scalar index picks one slice (x[:, 0] in ViT): slice, then drop the axis.
    std::vector<int64_t> ids = idx.to_ints();
    for (int64_t& j : ids) j = checked_index(c, j, size);
    bool contiguous = !ids.empty();
    for (size_t k = 1; k < ids.size(); ++k) contiguous = contiguous && ids[k] == ids[k - 1] + 1;
    if (contiguous && idx.shape.size() <= 1) {
      ir::ValueId x = c.value(0);
      const bool whole = ids.front() == 0 && static_cast<int64_t>(ids.size()) == size;
      if (!whole) {
        x = c.add(OpKind::slice, {x},
                  {{"axis", axis}, {"start", ids.front()}, {"end", ids.back() + 1}},
                  idx.shape.empty() ? "pick" : "");
      }
      if (idx.shape.empty()) {
        ir::Shape out = data;
        out.erase(out.begin() + axis);
        x = c.add(OpKind::reshape, {x}, {{"shape", out}});
      }
      return c.set_output(0, x);
    }
    HostTensor as_ints = HostTensor::ints(idx.shape, ids);
    const ir::ValueId indices = c.constant_value(as_ints, "indices");
    return c.set_output(0, c.add(OpKind::gather, {c.value(0), indices}, {{"axis", axis}}));
  }
  if (!c.is_integer(1)) c.fail("indices must be integers");
  // A constant table looked up by run-time ids: the embedding kernel's row gather.
  if (c.is_constant(0) && axis == 0 && data.size() == 2) {
    return c.set_output(0, c.add(OpKind::embedding, {c.value(0), c.value(1)}));
  }
  c.set_output(0, c.add(OpKind::gather, {c.value(0), c.value(1)}, {{"axis", axis}}));
}
bool fold_gather(NodeContext& c) {
  const HostTensor& data = c.constant(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), data.shape.size());
  c.set_constant_output(0, gather_tensor(data, axis, c.constant(1), c));
  return true;
}

ir::Shape expand_shape(NodeContext& c) {
  return broadcast_shapes(c, c.shape(0), c.constant(1).to_ints());
}
void map_expand(NodeContext& c) {
  const ir::Shape shape = expand_shape(c);
  if (shape == c.shape(0)) return c.set_output(0, c.value(0));
  c.set_output(0, c.add(OpKind::expand, {c.value(0)}, {{"shape", shape}}));
}
bool fold_expand(NodeContext& c) {
  c.set_constant_output(0, broadcast_tensor(c.constant(0), expand_shape(c)));
  return true;
}

void map_pad(NodeContext& c) {
  const size_t rank = c.shape(0).size();
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset() < 11) {
    pads = c.attr_ints("pads", {});
    value = c.attr_float("value", 0.0);
  } else {
    pads = c.constant(1).to_ints();
    if (c.has_input(2)) {
      const HostTensor& v = c.constant(2);
      if (v.numel() != 1) c.fail("constant_value must be a scalar");
      value = v.number(0);
    }
    if (c.has_input(3)) {  // opset 18: pads for the listed axes only
      const std::vector<int64_t> axes = normalize_axes(c, c.constant(3).to_ints(), rank);
      std::vector<int64_t> full(2 * rank, 0);
      for (size_t k = 0; k < axes.size(); ++k) {
        full[static_cast<size_t>(axes[k])] = pads[k];
        full[static_cast<size_t>(axes[k]) + rank] = pads[k + axes.size()];
      }
      pads = full;
    }
  }
  if (pads.size() != 2 * rank)
    c.fail("pads has " + std::to_string(pads.size()) + " entries for rank " + std::to_string(rank));
  std::string mode = c.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    c.fail("pad mode '" + mode + "' is not supported (constant, reflect, edge, wrap)");
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }))
    return alias(c, 0, 0);
  // Negative pads crop, before anything is padded (as the specification's reference does).
  ir::ValueId x = c.value(0);
  ir::Shape shape = c.shape(0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t& begin = pads[d];
    int64_t& end = pads[d + rank];
    if (begin >= 0 && end >= 0) continue;
    // Checked before negating: a pad of -2^63 has no positive counterpart.
    if (begin <= -shape[d] || end <= -shape[d] ||
        std::max<int64_t>(-begin, 0) + std::max<int64_t>(-end, 0) >= shape[d])
      c.fail("pads crop axis " + std::to_string(d) + " of " + std::to_string(shape[d]) +
             " to nothing");
    const int64_t crop_begin = std::max<int64_t>(-begin, 0);
    const int64_t crop_end = std::max<int64_t>(-end, 0);
    x = c.add(
        OpKind::slice, {x},
        {{"axis", static_cast<int64_t>(d)}, {"start", crop_begin}, {"end", shape[d] - crop_end}},
        "crop");
    shape[d] -= crop_begin + crop_end;
    begin = std::max<int64_t>(begin, 0);
    end = std::max<int64_t>(end, 0);
  }
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }))
    return c.set_output(0, x);
  if (mode != "wrap") {
    return c.set_output(
        0, c.add(OpKind::pad, {x}, {{"pads", pads}, {"mode", mode}, {"value", value}}));
  }
  // wrap (opset 19, circular padding): each axis's end rows before it and its first rows after.
  for (size_t d = 0; d < rank; ++d) {
    const int64_t begin = pads[d], end = pads[d + rank], axis = static_cast<int64_t>(d);
    if (begin == 0 && end == 0) continue;
    if (begin > shape[d] || end > shape[d])
      c.fail("wrap pads of " + std::to_string(std::max(begin, end)) + " on axis " +
             std::to_string(d) + " exceed its " + std::to_string(shape[d]) + " elements");
    std::vector<ir::ValueId> parts;
    if (begin > 0) {
      parts.push_back(c.add(OpKind::slice, {x},
                            {{"axis", axis}, {"start", shape[d] - begin}, {"end", shape[d]}},
                            "wrap_begin"));
    }
    parts.push_back(x);
    if (end > 0) {
      parts.push_back(c.add(OpKind::slice, {x},
                            {{"axis", axis}, {"start", int64_t{0}}, {"end", end}}, "wrap_end"));
    }
    x = c.add(OpKind::concat, parts, {{"axis", axis}}, "wrap");
    shape[d] += begin + end;
  }
  c.set_output(0, x);
}

// CenterCropPad (opset 18): each listed axis cropped or zero-padded to its target size around
// its centre (an odd difference crops or pads one more at the end), as a slice and a pad.
void map_center_crop_pad(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  const size_t rank = xs.size();
  const std::vector<int64_t> target = c.constant(1).to_ints();
  const std::vector<int64_t> axes = listed_axes(c, rank);
  if (target.size() != axes.size())
    c.fail("shape has " + std::to_string(target.size()) + " entries for " +
           std::to_string(axes.size()) + " axes");
  ir::ValueId x = c.value(0);
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t d = static_cast<size_t>(axes[k]);
    const int64_t want = target[k];
    if (want < 1) c.fail("shape entries must be >= 1");
    check_window_attr(c, "shape", want);
    if (want < xs[d]) {
      const int64_t start = (xs[d] - want) / 2;
      x = c.add(OpKind::slice, {x},
                {{"axis", static_cast<int64_t>(d)}, {"start", start}, {"end", start + want}},
                "crop");
    } else if (want > xs[d]) {
      pads[d] = (want - xs[d]) / 2;
      pads[d + rank] = want - xs[d] - pads[d];
    }
  }
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; })) {
    x = c.add(OpKind::pad, {x}, {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}},
              "pad");
  }
  c.set_output(0, x);
}

void map_tile(NodeContext& c) {
  const std::vector<int64_t> repeats = c.constant(1).to_ints();
  const ir::Shape in = c.shape(0);
  if (repeats.size() != in.size()) c.fail("repeats must have one entry per axis");
  // Each repeated axis is one concat of that many copies.
  constexpr int64_t kMaxRepeats = 1 << 16;
  ir::Shape out = in;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 1) c.fail("repeats must be >= 1");
    if (repeats[d] > kMaxRepeats) c.fail("repeats above 65536 are not supported");
    out[d] = in[d] * repeats[d];  // in[d] <= 2^40: no overflow
  }
  if (bounded_elements(out, kMaxElements) < 0)
    c.fail("the tiled tensor would have more than 2^40 elements");
  ir::ValueId x = c.value(0);
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] == 1) continue;
    std::vector<ir::ValueId> copies(static_cast<size_t>(repeats[d]), x);
    x = c.add(OpKind::concat, copies, {{"axis", static_cast<int64_t>(d)}},
              "axis" + std::to_string(d));
  }
  c.set_output(0, x);
}
bool fold_tile(NodeContext& c) {
  const std::vector<int64_t> repeats = c.constant(1).to_ints();
  HostTensor t = c.constant(0);
  if (repeats.size() != t.shape.size()) c.fail("repeats must have one entry per axis");
  ir::Shape out = t.shape;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 1) c.fail("repeats must be >= 1");
    if (t.shape[d] > 0 && repeats[d] > kMaxFoldedElements / t.shape[d])
      c.fail("the tiled constant would have more than 2^27 elements");
    out[d] = t.shape[d] * repeats[d];
  }
  check_fold_size(out);
  for (size_t d = 0; d < repeats.size(); ++d) {
    std::vector<const HostTensor*> parts(static_cast<size_t>(repeats[d]), &t);
    t = concat_tensors(parts, static_cast<int64_t>(d));
  }
  c.set_constant_output(0, t);
  return true;
}

// ScatterND writes `updates` at the index tuples of the last axis of `indices`, combined by
// `reduction` (none; add and mul from opset 16; max and min from 18). Where each tuple's slice
// lands: the data offset of its first element (tuples in order) and the slice length.
struct ScatterTargets {
  std::vector<int64_t> offsets;
  int64_t slice = 1;
  std::optional<OpKind> combine;  // reduction add, mul, max or min; none: the update replaces
};

std::optional<OpKind> scatter_combine(NodeContext& c) {
  static const std::map<std::string, std::optional<OpKind>> reductions = {{"none", std::nullopt},
                                                                          {"add", OpKind::add},
                                                                          {"mul", OpKind::mul},
                                                                          {"max", OpKind::max},
                                                                          {"min", OpKind::min}};
  const std::string r = c.attr_string("reduction", "none");
  const auto it = reductions.find(r);
  if (it == reductions.end())
    c.fail("reduction '" + r + "' is not one of none, add, mul, max, min");
  return it->second;
}

ScatterTargets scatter_targets(NodeContext& c, const ir::Shape& ds, const HostTensor& indices,
                               const ir::Shape& updates_shape) {
  if (indices.is_float()) c.fail("indices must be integers");
  const ir::Shape& is = indices.shape;
  if (is.empty()) c.fail("indices must have rank >= 1");
  const int64_t k = is.back();
  if (k < 1 || k > static_cast<int64_t>(ds.size())) {
    c.fail("indices' last dimension is " + std::to_string(k) + " for data of rank " +
           std::to_string(ds.size()));
  }
  ir::Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), ds.begin() + k, ds.end());
  if (updates_shape != want) {
    c.fail("updates have shape " + ir::to_string(updates_shape) + ", expected " +
           ir::to_string(want));
  }
  ScatterTargets t;
  t.combine = scatter_combine(c);
  for (size_t d = static_cast<size_t>(k); d < ds.size(); ++d) t.slice *= ds[d];
  const int64_t tuples = ir::num_elements(ir::Shape(is.begin(), is.end() - 1));
  for (int64_t tuple = 0; tuple < tuples; ++tuple) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = indices.i[static_cast<size_t>(tuple * k + j)];
      const int64_t dim = ds[static_cast<size_t>(j)];
      if (v < 0) v += dim;
      if (v < 0 || v >= dim) {
        c.fail("index " + std::to_string(indices.i[static_cast<size_t>(tuple * k + j)]) +
               " is out of range for axis " + std::to_string(j) + " of size " +
               std::to_string(dim));
      }
      offset = offset * dim + v;
    }
    t.offsets.push_back(offset * t.slice);
  }
  return t;
}

// ScatterElements (torch.scatter): update element p lands at p with its `axis` coordinate
// replaced by indices[p] (element_positions); indices and updates have one shape.
ScatterTargets element_targets(NodeContext& c, const ir::Shape& ds, const HostTensor& indices,
                               const ir::Shape& updates_shape) {
  if (indices.is_float()) c.fail("indices must be integers");
  if (updates_shape != indices.shape)
    c.fail("updates have shape " + ir::to_string(updates_shape) + ", indices " +
           ir::to_string(indices.shape));
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), ds.size());
  const ElementPositions p = element_positions(c, ds, indices.shape, axis);
  ScatterTargets t;
  t.combine = c.op_type() == "Scatter" ? std::nullopt : scatter_combine(c);
  for (size_t k = 0; k < p.base.size(); ++k) {
    const int64_t j = checked_index(c, indices.i[k], p.axis_size);
    t.offsets.push_back(p.base[k] + j * p.axis_stride);
  }
  return t;
}

// `out` with every update combined in at its target, in tuple order (the last write wins with
// reduction none). `written`, when given, marks the elements some update reached.
void scatter_into(HostTensor& out, const HostTensor& updates, const ScatterTargets& t,
                  std::vector<int64_t>* written) {
  auto combine = [&](auto old, auto update, bool first) {
    if (first || !t.combine) return update;
    switch (*t.combine) {
      case OpKind::add:
        return old + update;
      case OpKind::mul:
        return old * update;
      case OpKind::max:
        return std::max(old, update);
      default:
        return std::min(old, update);
    }
  };
  for (size_t tuple = 0; tuple < t.offsets.size(); ++tuple) {
    for (int64_t e = 0; e < t.slice; ++e) {
      const size_t at = static_cast<size_t>(t.offsets[tuple] + e);
      const int64_t u = static_cast<int64_t>(tuple) * t.slice + e;
      // Folding combines with the data itself; the run-time form collects the updates alone.
      const bool first = written && (*written)[at] == 0;
      if (out.is_float()) {
        out.f[at] = combine(out.f[at], static_cast<float>(updates.number(u)), first);
      } else {
        out.i[at] = combine(out.i[at], updates.integer(u), first);
      }
      if (written) (*written)[at] = 1;
    }
  }
}

// On constants (Swin builds its shifted-window attention mask by slice assignment).
bool fold_scatter(NodeContext& c) {
  const HostTensor& data = c.constant(0);
  const HostTensor& updates = c.constant(2);
  const ScatterTargets t = c.op_type() == "ScatterND"
                               ? scatter_targets(c, data.shape, c.constant(1), updates.shape)
                               : element_targets(c, data.shape, c.constant(1), updates.shape);
  HostTensor out = data;
  scatter_into(out, updates, t, nullptr);
  c.set_constant_output(0, out);
  return true;
}

// ScatterND and ScatterElements into run-time data at constant indices (`y[:, 0] = v`, a slice
// assignment traced into the graph; x.scatter(1, index, src)): a constant mask of the written
// elements picks between the data and the updates laid out in the data's shape. Constant updates
// are combined at import (add, mul, max and min are associative, so the data combines with their
// combination); run-time updates are gathered into place, one layer per repeat of a target. The
// constants are data-sized. Run-time indices go to map_scatter_at_run_time.
void map_scatter(NodeContext& c) {
  if (!c.is_constant(1))
    return map_scatter_at_run_time(c, c.op_type() == "Scatter" ? std::nullopt : scatter_combine(c));
  const ir::Shape ds = c.shape(0);
  if (ir::num_elements(ds) > kMaxFoldedElements)
    c.fail("data of " + ir::to_string(ds) + " is larger than 2^27 elements");
  const ScatterTargets t = c.op_type() == "ScatterND"
                               ? scatter_targets(c, ds, c.constant(1), c.shape(2))
                               : element_targets(c, ds, c.constant(1), c.shape(2));
  const int64_t n = ir::num_elements(ds);
  const ir::ValueId data = c.value(0);
  if (c.is_constant(2)) {
    const HostTensor& updates = c.constant(2);
    HostTensor laid = updates.is_float()
                          ? HostTensor::floats(ds, std::vector<float>(static_cast<size_t>(n), 0.0f))
                          : HostTensor::ints(ds, std::vector<int64_t>(static_cast<size_t>(n), 0));
    std::vector<int64_t> written(static_cast<size_t>(n), 0);
    scatter_into(laid, updates, t, &written);
    ir::ValueId placed = c.constant_value(laid, "updates");
    if (t.combine) placed = c.add(*t.combine, {data, placed}, {}, "combined");
    const ir::ValueId mask = c.constant_value(
        HostTensor::ints(ds, std::move(written), HostTensor::Kind::boolean), "written");
    return c.set_output(0, c.add(OpKind::where, {mask, placed, data}));
  }
  // Run-time updates are gathered into place in layers: layer l holds, at each data element,
  // the l-th update that lands there (in index order). With reduction none one layer holds the
  // last; otherwise the data combines with each layer in turn, where that layer reaches.
  const int64_t count = ir::num_elements(c.shape(2));
  if (count > kMaxExactInteger)
    c.fail("run-time updates of " + ir::to_string(c.shape(2)) +
           ": positions above 2^24 are not exact in fp32 storage");
  auto for_each_update = [&](auto f) {  // f(data element, update element), in index order
    for (size_t tuple = 0; tuple < t.offsets.size(); ++tuple)
      for (int64_t e = 0; e < t.slice; ++e)
        f(static_cast<size_t>(t.offsets[tuple] + e), static_cast<int64_t>(tuple) * t.slice + e);
  };
  std::vector<uint8_t> hits(static_cast<size_t>(n), 0);
  size_t layers = 1;
  if (t.combine) {
    for_each_update([&](size_t at, int64_t) {
      if (hits[at] <= kMaxScatterLayers) layers = std::max<size_t>(layers, ++hits[at]);
    });
    // Past this many layers the IR's scatter (updates applied in order) is the cheaper form.
    if (layers > kMaxScatterLayers) return map_scatter_at_run_time(c, t.combine);
  }
  const ir::ValueId flat =
      c.add(OpKind::reshape, {c.value(2)}, {{"shape", ir::Shape{count}}}, "flat_updates");
  ir::ValueId y = data;
  for (size_t l = 0; l < layers; ++l) {
    std::vector<int64_t> source(static_cast<size_t>(n), 0), reached(static_cast<size_t>(n), 0);
    std::fill(hits.begin(), hits.end(), 0);
    for_each_update([&](size_t at, int64_t u) {
      // none: every write replaces the last; else only the l-th write at `at` is this layer's.
      if (!t.combine || hits[at]++ == l) source[at] = u, reached[at] = 1;
    });
    const std::string tag = "layer" + std::to_string(l);
    ir::ValueId placed =
        c.add(OpKind::gather,
              {flat, c.constant_value(HostTensor::ints(ds, std::move(source)), tag + "_sources")},
              {{"axis", int64_t{0}}}, tag + "_placed");
    if (t.combine) placed = c.add(*t.combine, {y, placed}, {}, tag + "_combined");
    const ir::ValueId mask = c.constant_value(
        HostTensor::ints(ds, std::move(reached), HostTensor::Kind::boolean), tag + "_reached");
    y = c.add(OpKind::where, {mask, placed, y}, {}, l + 1 == layers ? "" : tag);
  }
  c.set_output(0, y);
}

// ---- Constant producers ---------------------------------------------------------------------

bool fold_shape(NodeContext& c) {
  const ir::Shape s = c.shape(0);  // static once inputs are bound, even for run-time values
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  c.set_constant_output(
      0, HostTensor::ints({end - start}, std::vector<int64_t>(s.begin() + start, s.begin() + end)));
  return true;
}

bool fold_size(NodeContext& c) {
  c.set_constant_output(0, HostTensor::ints({}, {ir::num_elements(c.shape(0))}));
  return true;
}

bool fold_constant(NodeContext& c) {
  if (c.has_attr("value")) {
    c.set_constant_output(0, c.attr_tensor("value"));
  } else if (c.has_attr("value_float")) {
    c.set_constant_output(
        0, HostTensor::floats({}, {static_cast<float>(c.attr_float("value_float", 0))}));
  } else if (c.has_attr("value_floats")) {
    const std::vector<float> v = c.attr_floats("value_floats");
    c.set_constant_output(0, HostTensor::floats({static_cast<int64_t>(v.size())}, v));
  } else if (c.has_attr("value_int")) {
    c.set_constant_output(0, HostTensor::ints({}, {c.attr_int("value_int", 0)}));
  } else if (c.has_attr("value_ints")) {
    const std::vector<int64_t> v = c.attr_ints("value_ints", {});
    c.set_constant_output(0, HostTensor::ints({static_cast<int64_t>(v.size())}, v));
  } else {
    c.fail(
        "only tensor, float(s) and int(s) values are supported (sparse and string constants are "
        "not)");
  }
  return true;
}

bool fold_constant_of_shape(NodeContext& c) {
  const std::vector<int64_t> dims = c.constant(0).to_ints();
  for (int64_t d : dims) {
    if (d < 0) c.fail("negative dimension in the shape");
  }
  const ir::Shape shape(dims.begin(), dims.end());
  HostTensor fill = c.has_attr("value") ? c.attr_tensor("value") : HostTensor::floats({1}, {0.0f});
  if (fill.numel() != 1) c.fail("value must hold one element");
  fill.shape = {};
  c.set_constant_output(0, broadcast_tensor(fill, shape));
  return true;
}

// EyeLike(x; k, dtype): ones on the k-th diagonal of a 2-D tensor of x's shape, known at import
// whether x is or not. The element type is dtype's, else x's.
bool fold_eye_like(NodeContext& c) {
  const ir::Shape s = c.shape(0);
  if (s.size() != 2) c.fail("input must be 2-D, got rank " + std::to_string(s.size()));
  check_fold_size(s);
  // Past either edge every entry is 0; clamped there, i + k cannot overflow.
  const int64_t k = std::clamp<int64_t>(c.attr_int("k", 0), -s[0], s[1]);
  const bool integers =
      c.has_attr("dtype") ? !is_float_type(c.attr_int("dtype", 0)) : c.is_integer(0);
  std::vector<int64_t> ones(static_cast<size_t>(s[0] * s[1]), 0);
  for (int64_t i = 0; i < s[0]; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < s[1]) ones[static_cast<size_t>(i * s[1] + j)] = 1;
  }
  HostTensor eye = HostTensor::ints(s, ones);
  if (!integers) eye = HostTensor::floats(s, eye.to_floats());
  c.set_constant_output(0, eye);
  return true;
}

bool fold_range(NodeContext& c) {
  const HostTensor &start = c.constant(0), &limit = c.constant(1), &delta = c.constant(2);
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1)
    c.fail("start, limit and delta must be scalars");
  const double s = start.number(0), l = limit.number(0), d = delta.number(0);
  if (d == 0) c.fail("delta must not be 0");
  const double count = std::ceil((l - s) / d);
  if (!std::isfinite(count) || count > static_cast<double>(kMaxFoldedElements))
    c.fail("range too long (at most 2^27 elements)");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  if (start.is_float()) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      v[static_cast<size_t>(k)] = static_cast<float>(s + static_cast<double>(k) * d);
    c.set_constant_output(0, HostTensor::floats({n}, v));
  } else {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      int64_t step = 0;
      if (__builtin_mul_overflow(k, delta.integer(0), &step) ||
          __builtin_add_overflow(start.integer(0), step, &v[static_cast<size_t>(k)]))
        c.fail("range overflows int64");
    }
    c.set_constant_output(0, HostTensor::ints({n}, v));
  }
  return true;
}

void map_identity(NodeContext& c) {
  alias(c, 0, 0);
}
bool fold_identity(NodeContext& c) {
  alias(c, 0, 0);
  return true;
}

// Inference: Dropout passes its input through; its mask output has no meaning here. In training
// mode only a ratio of 0 is the identity (torchvision 0.14's Swin exports its attention dropout
// so: F.dropout without training=, p = 0).
void map_dropout(NodeContext& c) {
  if (c.output_used(1)) c.fail("the mask output is only defined in training");
  if (c.opset() < 12 || !c.has_input(2)) return alias(c, 0, 0);
  if (!c.is_constant(2) || c.constant(2).numel() != 1)
    c.fail("training_mode must be a constant scalar");
  if (c.constant(2).integer(0) != 0) {
    const bool zero_ratio = c.has_input(1) && c.is_constant(1) && c.constant(1).numel() == 1 &&
                            c.constant(1).number(0) == 0;
    if (!zero_ratio) c.fail("training_mode is true with a ratio other than 0 (random at run time)");
  }
  alias(c, 0, 0);
}
bool fold_dropout(NodeContext& c) {
  map_dropout(c);
  return true;
}

}  // namespace

void add_shape_mappings(std::vector<OpMapping>& t) {
  t.push_back({"Reshape", map_reshape, fold_reshape});
  t.push_back({"Flatten", map_flatten, fold_flatten});
  t.push_back({"Squeeze", map_squeeze, fold_squeeze});
  t.push_back({"Unsqueeze", map_unsqueeze, fold_unsqueeze});
  t.push_back({"Transpose", map_transpose, fold_transpose});
  t.push_back({"Concat", map_concat, fold_concat});
  t.push_back({"Split", map_split, fold_split});
  t.push_back({"Slice", map_slice, fold_slice});
  t.push_back({"Gather", map_gather, fold_gather});
  t.push_back({"Expand", map_expand, fold_expand});
  t.push_back({"Pad", map_pad, nullptr});
  t.push_back({"CenterCropPad", map_center_crop_pad, nullptr});
  t.push_back({"ScatterND", map_scatter, fold_scatter});
  t.push_back({"ScatterElements", map_scatter, fold_scatter});
  t.push_back({"Scatter", map_scatter, fold_scatter});  // ScatterElements before opset 11
  t.push_back({"Tile", map_tile, fold_tile});
  t.push_back({"DepthToSpace", map_depth_space, nullptr});
  t.push_back({"SpaceToDepth", map_depth_space, nullptr});
  t.push_back({"Shape", nullptr, fold_shape});
  t.push_back({"Size", nullptr, fold_size});
  t.push_back({"Constant", nullptr, fold_constant});
  t.push_back({"ConstantOfShape", nullptr, fold_constant_of_shape});
  t.push_back({"Range", nullptr, fold_range});
  t.push_back({"EyeLike", nullptr, fold_eye_like});
  t.push_back({"Identity", map_identity, fold_identity});
  t.push_back({"Dropout", map_dropout, fold_dropout});
}

}  // namespace cuvil::bench::onnx_import
