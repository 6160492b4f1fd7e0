// Conv, MaxPool and AveragePool over three spatial axes (torchvision's video classifiers: R3D,
// MC3, R(2+1)D, S3D) as their 2-D forms, so every conv kernel, pass and knob serves them.
// A 3-D convolution with kd depth taps reads, for output frame t, input frames t * sd + j * dd
// (j < kd): those kd frame slabs stacked on the channel axis, each output frame becomes one image
// of a batch N * Do, and one 2-D convolution over kd x C channels computes it. A 3-D pool pools
// each frame in 2-D, then takes the max (or average) of the kd slabs.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"
#include "bench_suite/models/onnx/window_attrs.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;
using ints = std::vector<int64_t>;

// The depth axis of a window: frames in, out, and where tap j of output t reads.
struct DepthAxis {
  int64_t in, kernel, stride, dilation, pad_begin, pad_end, out;
};

DepthAxis depth_axis(NodeContext& c, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
                     int64_t pe) {
  const int64_t room = in + pb + pe - (d * (k - 1) + 1);
  if (room < 0) c.fail("output would be empty (the window is deeper than the padded input)");
  return {in, k, s, d, pb, pe, room / s + 1};
}

// x [N, C, D, ...] padded on axis 2 by the depth axis's pads with `fill`.
ir::ValueId pad_depth(NodeContext& c, ir::ValueId x, const DepthAxis& a, double fill) {
  if (a.pad_begin == 0 && a.pad_end == 0) return x;
  ints pads(10, 0);
  pads[2] = a.pad_begin;
  pads[7] = a.pad_end;
  return c.add(OpKind::pad, {x},
               {{"pads", pads}, {"mode", std::string("constant")}, {"value", fill}}, "pad_depth");
}

// The frames tap j of every output reads from the padded input: j * dd + t * sd, t < Do.
ir::ValueId depth_slab(NodeContext& c, ir::ValueId padded, const DepthAxis& a, int64_t j) {
  const int64_t first = j * a.dilation;
  if (a.stride == 1) {
    if (first == 0 && a.out == c.value_shape(padded)[2]) return padded;
    return c.add(OpKind::slice, {padded},
                 {{"axis", int64_t{2}}, {"start", first}, {"end", first + a.out}},
                 "tap" + std::to_string(j));
  }
  ints frames;
  for (int64_t t = 0; t < a.out; ++t) frames.push_back(first + t * a.stride);
  const ir::ValueId idx = c.constant_value(HostTensor::ints({a.out}, frames), "frames");
  return c.add(OpKind::gather, {padded, idx}, {{"axis", int64_t{2}}}, "tap" + std::to_string(j));
}

// [N, C', Do, H, W] -> [N * Do, C', H, W]: each output frame an image.
ir::ValueId frames_as_batch(NodeContext& c, ir::ValueId x) {
  const ir::Shape s = c.value_shape(x);
  x = c.add(OpKind::transpose, {x}, {{"perm", ints{0, 2, 1, 3, 4}}}, "frames_first");
  return c.add(OpKind::reshape, {x}, {{"shape", ir::Shape{s[0] * s[2], s[1], s[3], s[4]}}},
               "frames");
}

// [N * Do, O, Ho, Wo] -> [N, O, Do, Ho, Wo].
ir::ValueId batch_as_frames(NodeContext& c, ir::ValueId y, int64_t n, int64_t frames) {
  const ir::Shape s = c.value_shape(y);
  y = c.add(OpKind::reshape, {y}, {{"shape", ir::Shape{n, frames, s[1], s[2], s[3]}}}, "unframe");
  return c.add(OpKind::transpose, {y}, {{"perm", ints{0, 2, 1, 3, 4}}});
}

}  // namespace

void map_conv3d(NodeContext& c) {
  const ir::Shape xs = c.shape(0), ws = c.shape(1);
  if (ws.size() != 5) c.fail("weight rank differs from the input's");
  const ints kernel(ws.begin() + 2, ws.end());
  if (c.attr_ints("kernel_shape", kernel) != kernel)
    c.fail("kernel_shape does not match the weight");
  const ints strides = per_axis_attr(c, "strides", 3);
  const ints dilations = per_axis_attr(c, "dilations", 3);
  ints span(3);
  for (size_t a = 0; a < 3; ++a) span[a] = dilations[a] * (kernel[a] - 1) + 1;
  const Padding p = spatial_padding(c, ir::Shape(xs.begin() + 2, xs.end()), span, strides);
  const int64_t groups = c.attr_int("group", 1);
  if (groups < 1 || xs[1] % groups != 0 || ws[1] * groups != xs[1]) {
    c.fail("the weight's " + std::to_string(ws[1]) + " input channels times group " +
           std::to_string(groups) + " must equal the input's " + std::to_string(xs[1]));
  }
  const DepthAxis depth =
      depth_axis(c, xs[2], kernel[0], strides[0], dilations[0], p.begin[0], p.end[0]);

  // The kd frame slabs stacked on channels, group-major: channel (g, j, c) of g's C / G.
  const ir::ValueId padded = pad_depth(c, c.value(0), depth, 0.0);
  const int64_t n = xs[0], cg = ws[1], kd = kernel[0];
  std::vector<ir::ValueId> slabs;
  for (int64_t j = 0; j < kd; ++j) {
    ir::ValueId slab = depth_slab(c, padded, depth, j);
    if (groups > 1) {
      slab = c.add(OpKind::reshape, {slab},
                   {{"shape", ir::Shape{n, groups, cg, depth.out, xs[3], xs[4]}}}, "grouped");
    }
    slabs.push_back(slab);
  }
  ir::ValueId stacked =
      kd == 1 ? slabs[0]
              : c.add(OpKind::concat, slabs, {{"axis", int64_t{groups > 1 ? 2 : 1}}}, "stack");
  if (groups > 1) {
    stacked =
        c.add(OpKind::reshape, {stacked},
              {{"shape", ir::Shape{n, groups * kd * cg, depth.out, xs[3], xs[4]}}}, "stacked");
  }
  ir::ValueId x = frames_as_batch(c, stacked);

  // The weight [O, Cg, kd, kh, kw] as [O, kd * Cg, kh, kw], tap-major within each group.
  ir::ValueId w;
  const ir::Shape w2 = {ws[0], kd * cg, ws[3], ws[4]};
  if (c.is_constant(1) && c.constant(1).is_float()) {
    w = c.constant_value(reshaped(transpose_tensor(c.constant(1), {0, 2, 1, 3, 4}), w2), "taps",
                         true);
  } else {
    w = c.add(OpKind::transpose, {c.value(1)}, {{"perm", ints{0, 2, 1, 3, 4}}}, "w_taps");
    w = c.add(OpKind::reshape, {w}, {{"shape", w2}}, "w2d");
  }
  const ints sym = split_padding(c, x, {p.begin[1], p.begin[2]}, {p.end[1], p.end[2]}, 0.0);
  std::vector<ir::ValueId> inputs = {x, w};
  if (c.has_input(2)) inputs.push_back(c.value(2));
  ir::Attrs attrs = {{"stride", ints{strides[1], strides[2]}}, {"pad", sym}, {"groups", groups}};
  if (dilations[1] != 1 || dilations[2] != 1)
    attrs.set("dilation", ints{dilations[1], dilations[2]});
  const ir::ValueId y = c.add(OpKind::conv2d, inputs, attrs, "conv2d");
  c.set_output(0, batch_as_frames(c, y, n, depth.out));
}

void map_pool3d(NodeContext& c) {
  const bool is_max = c.op_type() == "MaxPool";
  const ir::Shape xs = c.shape(0);
  require_unit_dilations(c, 3);
  if (c.attr_int("ceil_mode", 0) != 0) c.fail("ceil_mode is not supported for 3-D pooling");
  const ints kernel = kernel_shape_attr(c, 3);
  const ints strides = per_axis_attr(c, "strides", 3);
  const Padding p = spatial_padding(c, ir::Shape(xs.begin() + 2, xs.end()), kernel, strides);
  const bool include_pad = c.attr_int("count_include_pad", 0) != 0;
  const DepthAxis depth = depth_axis(c, xs[2], kernel[0], strides[0], 1, p.begin[0], p.end[0]);
  const int64_t n = xs[0], ch = xs[1];

  // Every frame pooled in 2-D: [N, C * D, H, W].
  ir::ValueId x = c.add(OpKind::reshape, {c.value(0)},
                        {{"shape", ir::Shape{n, ch * xs[2], xs[3], xs[4]}}}, "frames");
  const ints sym = pool_padding(c, x, {kernel[1], kernel[2]}, {p.begin[1], p.begin[2]},
                                {p.end[1], p.end[2]}, is_max, include_pad);
  ir::Attrs attrs = {{"kernel", ints{kernel[1], kernel[2]}},
                     {"stride", ints{strides[1], strides[2]}},
                     {"pad", sym}};
  if (!is_max) attrs.set("count_include_pad", int64_t{include_pad ? 1 : 0});
  x = c.add(is_max ? OpKind::max_pool2d : OpKind::avg_pool2d, {x}, attrs, "pool2d");
  const ir::Shape ps = c.value_shape(x);
  x = c.add(OpKind::reshape, {x}, {{"shape", ir::Shape{n, ch, xs[2], ps[2], ps[3]}}}, "unframe");

  // Then across the kd frame slabs.
  const ir::ValueId padded =
      pad_depth(c, x, depth, is_max ? -std::numeric_limits<double>::infinity() : 0.0);
  ir::ValueId y = depth_slab(c, padded, depth, 0);
  for (int64_t j = 1; j < depth.kernel; ++j)
    y = c.add(is_max ? OpKind::max : OpKind::add, {y, depth_slab(c, padded, depth, j)});
  if (!is_max && depth.kernel > 1) {
    // Frames each window covers: kd, or without the padding's (windows are boxes, so the 2-D
    // average over valid pixels averaged over valid frames is the 3-D one).
    std::vector<float> inv(static_cast<size_t>(depth.out));
    for (int64_t t = 0; t < depth.out; ++t) {
      const int64_t first = t * depth.stride - depth.pad_begin;
      const int64_t valid = std::min(first + depth.kernel, depth.in) - std::max<int64_t>(first, 0);
      if (valid < 1) c.fail("a window covers only padding frames (pads not below kernel_shape)");
      inv[static_cast<size_t>(t)] = 1.0f / static_cast<float>(include_pad ? depth.kernel : valid);
    }
    const ir::ValueId scale =
        c.constant_value(HostTensor::floats({1, 1, depth.out, 1, 1}, std::move(inv)), "inv_frames");
    y = c.add(OpKind::mul, {y, scale}, {}, "mean");
  }
  c.set_output(0, y);
}

}  // namespace cuvil::bench::onnx_import
