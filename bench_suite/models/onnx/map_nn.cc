// Network layers: Conv, Gemm, MatMul, BatchNormalization, InstanceNormalization,
// GroupNormalization, LayerNormalization, the pools, the reductions, and Resize/Upsample (nearest,
// linear, cubic).
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "base/error.h"
#include "bench_suite/models/onnx/importer.h"
#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"
#include "bench_suite/models/onnx/window_attrs.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;

// ---- Conv -----------------------------------------------------------------------------------

// Kernel taps that read only zero padding, for every output pixel, add nothing. Those at the
// kernel's edges are trimmed off with the padding they read: on an axis of `in` input and `out`
// output pixels, stride s and dilation d, the first tap is dead while even the last output's
// lies above the input, the last while even the first output's lies past it. Returns the taps
// trimmed from the start and the end; `pb` and `pe` lose d per tap (the output size is kept).
// DeepLab's atrous pyramid at rates 24 and 36 on a 14 x 14 map (a 224-pixel input) is 1x1.
std::pair<int64_t, int64_t> trim_padding_taps(int64_t in, int64_t out, int64_t k, int64_t s,
                                              int64_t d, int64_t& pb, int64_t& pe) {
  int64_t lo = 0, hi = 0;
  while (k - lo - hi > 1 && pb >= d && (out - 1) * s - pb < 0) pb -= d, ++lo;
  while (k - lo - hi > 1 && pe >= d && (k - lo - hi - 1) * d - pb >= in) pe -= d, ++hi;
  return {lo, hi};
}

// w[O, Cg, k...] restricted to taps [lo[a], k[a] - hi[a]) on each spatial axis a.
HostTensor crop_taps(const HostTensor& w, const std::vector<int64_t>& lo,
                     const std::vector<int64_t>& hi) {
  const size_t r = w.shape.size() - 2;
  ir::Shape shape = w.shape;
  for (size_t a = 0; a < r; ++a) shape[2 + a] -= lo[a] + hi[a];
  const int64_t kh = r == 2 ? w.shape[2] : 1, kw = w.shape.back();
  const int64_t lo_h = r == 2 ? lo[0] : 0, lo_w = lo.back();
  const int64_t nh = r == 2 ? shape[2] : 1, nw = shape.back();
  std::vector<float> out;
  out.reserve(static_cast<size_t>(ir::num_elements(shape)));
  for (int64_t oc = 0; oc < w.shape[0] * w.shape[1]; ++oc)
    for (int64_t i = 0; i < nh; ++i)
      for (int64_t j = 0; j < nw; ++j)
        out.push_back(w.f[static_cast<size_t>((oc * kh + lo_h + i) * kw + lo_w + j)]);
  return HostTensor::floats(shape, std::move(out));
}

void map_conv(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  const ir::Shape ws = c.shape(1);
  if (xs.size() == 5) return map_conv3d(c);
  if (xs.size() != 4 && xs.size() != 3) {
    c.fail("only 1-D, 2-D and 3-D convolutions are supported (input rank " +
           std::to_string(xs.size()) + ")");
  }
  if (ws.size() != xs.size()) c.fail("weight rank differs from the input's");
  const bool one_d = xs.size() == 3;
  const size_t r = xs.size() - 2;
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  const std::vector<int64_t> ks = c.attr_ints("kernel_shape", kernel);
  if (ks != kernel) c.fail("kernel_shape does not match the weight");
  const std::vector<int64_t> strides = per_axis_attr(c, "strides", r);
  std::vector<int64_t> dilations = per_axis_attr(c, "dilations", r);
  std::vector<int64_t> span(r);  // input pixels a dilated kernel covers, for auto_pad
  for (size_t d = 0; d < r; ++d) {
    if (kernel[d] == 1) dilations[d] = 1;  // a 1-tap axis has nothing to dilate
    span[d] = dilations[d] * (kernel[d] - 1) + 1;
  }
  const Padding p = spatial_padding(c, ir::Shape(xs.begin() + 2, xs.end()), span, strides);
  std::vector<int64_t> pb = p.begin, pe = p.end;
  ir::ValueId x = c.value(0);
  ir::ValueId w = ir::kNoValue;
  if (c.is_constant(1) && c.constant(1).is_float()) {
    std::vector<int64_t> lo(r), hi(r);
    for (size_t d = 0; d < r; ++d) {
      const int64_t in = xs[2 + d];
      const int64_t room = in + pb[d] + pe[d] - span[d];
      if (room < 0) break;  // no window fits: shape inference names the empty output
      const int64_t out = room / strides[d] + 1;
      std::tie(lo[d], hi[d]) =
          trim_padding_taps(in, out, kernel[d], strides[d], dilations[d], pb[d], pe[d]);
      if (kernel[d] - lo[d] - hi[d] == 1) dilations[d] = 1;
    }
    const bool trimmed = std::any_of(lo.begin(), lo.end(), [](int64_t v) { return v > 0; }) ||
                         std::any_of(hi.begin(), hi.end(), [](int64_t v) { return v > 0; });
    if (trimmed) {
      const HostTensor live = crop_taps(c.constant(1), lo, hi);
      // `list` reports them beside the parameter count, which counts what the plan holds.
      c.graph().annotations[kDroppedPaddingTaps] += c.constant(1).numel() - live.numel();
      w = c.constant_value(live, "live_taps", true);
    }
  }
  if (w == ir::kNoValue) w = c.value(1);
  const ir::Shape w_shape = c.value_shape(w);
  std::vector<int64_t> stride2 = strides;
  if (one_d) {
    x = as_2d(c, x, "as2d");
    ir::Shape w4 = w_shape;
    w4.insert(w4.begin() + 2, 1);
    w = c.add(OpKind::reshape, {w}, {{"shape", w4}}, "weight2d");
    stride2.insert(stride2.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    pb.insert(pb.begin(), 0);
    pe.insert(pe.begin(), 0);
  }
  const std::vector<int64_t> sym = split_padding(c, x, pb, pe, 0.0);
  std::vector<ir::ValueId> inputs = {x, w};
  if (c.has_input(2)) inputs.push_back(c.value(2));
  ir::Attrs attrs = {{"stride", stride2}, {"pad", sym}, {"groups", c.attr_int("group", 1)}};
  if (dilations != std::vector<int64_t>{1, 1}) attrs.set("dilation", dilations);
  ir::ValueId y = c.add(OpKind::conv2d, inputs, attrs, one_d ? "conv2d" : "");
  if (one_d) {
    ir::Shape s = c.value_shape(y);
    s.erase(s.begin() + 2);
    y = c.add(OpKind::reshape, {y}, {{"shape", s}});
  }
  c.set_output(0, y);
}

// ---- Gemm and MatMul ------------------------------------------------------------------------

HostTensor scaled(HostTensor t, double s) {
  if (s != 1.0) {
    for (float& v : t.f) v = static_cast<float>(v * s);
  }
  return t;
}

void map_gemm(NodeContext& c) {
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  const bool trans_a = c.attr_int("transA", 0) != 0, trans_b = c.attr_int("transB", 0) != 0;
  if (c.shape(0).size() != 2 || c.shape(1).size() != 2) c.fail("A and B must be matrices");
  ir::ValueId a = c.value(0);
  if (trans_a) a = c.add(OpKind::transpose, {a}, {{"perm", std::vector<int64_t>{1, 0}}}, "transA");
  const int64_t n = trans_b ? c.shape(1)[0] : c.shape(1)[1];
  const bool has_c = c.has_input(2) && beta != 0.0;
  if (c.is_constant(1) && c.constant(1).is_float()) {
    // Linear layer: the weight as [N, K] (PyTorch's layout), alpha folded into it.
    HostTensor w = c.constant(1);
    if (!trans_b) w = transpose_tensor(w, {1, 0});
    std::vector<ir::ValueId> inputs = {a, c.constant_value(scaled(w, alpha), "weight", true)};
    bool bias_fused = false;
    if (has_c && c.is_constant(2)) {
      const HostTensor& bias = c.constant(2);
      const bool per_column = bias.numel() == n && (bias.shape.size() == 1 ||
                                                    (bias.shape.size() == 2 && bias.shape[0] == 1));
      const bool scalar = bias.numel() == 1;
      if (per_column || scalar) {
        HostTensor b = broadcast_tensor(reshaped(bias, {bias.numel()}), {n});
        inputs.push_back(c.constant_value(scaled(b, beta), "bias", true));
        bias_fused = true;
      }
    }
    ir::ValueId y = c.add(OpKind::linear, inputs, {}, bias_fused || !has_c ? "" : "linear");
    if (has_c && !bias_fused) {
      ir::ValueId cv =
          c.is_constant(2) ? c.constant_value(scaled(c.constant(2), beta), "c") : c.value(2);
      if (!c.is_constant(2) && beta != 1.0)
        cv = c.add(OpKind::mul, {cv, c.float_constant(beta, "beta")}, {}, "beta");
      y = c.add(OpKind::add, {y, cv});
    }
    return c.set_output(0, y);
  }
  ir::ValueId b = c.value(1);
  if (trans_b) b = c.add(OpKind::transpose, {b}, {{"perm", std::vector<int64_t>{1, 0}}}, "transB");
  ir::ValueId y = c.add(OpKind::matmul, {a, b}, {}, "matmul");
  if (alpha != 1.0) y = c.add(OpKind::mul, {y, c.float_constant(alpha, "alpha")}, {}, "alpha");
  if (has_c) {
    ir::ValueId cv =
        c.is_constant(2) ? c.constant_value(scaled(c.constant(2), beta), "c") : c.value(2);
    y = c.add(OpKind::add, {y, cv});
  }
  c.set_output(0, y);
}

void map_matmul(NodeContext& c) {
  ir::Shape as = c.shape(0), bs = c.shape(1);
  if (as.empty() || bs.empty()) c.fail("operands must have rank >= 1");
  ir::ValueId a = c.value(0);
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) a = c.add(OpKind::reshape, {a}, {{"shape", ir::Shape{1, as[0]}}}, "a2d");
  ir::Shape out;
  ir::ValueId y;
  if (c.is_constant(1) && bs.size() == 2 && c.constant(1).is_float()) {
    // A constant matrix on the right: a linear layer with the weight as [N, K].
    const ir::ValueId w = c.constant_value(transpose_tensor(c.constant(1), {1, 0}), "weight", true);
    y = c.add(OpKind::linear, {a, w}, {}, a_vec ? "linear" : "");
  } else {
    ir::ValueId b = c.value(1);
    if (b_vec) b = c.add(OpKind::reshape, {b}, {{"shape", ir::Shape{bs[0], 1}}}, "b2d");
    y = c.add(OpKind::matmul, {a, b}, {}, a_vec || b_vec ? "matmul" : "");
  }
  if (a_vec || b_vec) {
    ir::Shape s = c.value_shape(y);
    if (b_vec) s.pop_back();
    if (a_vec) s.erase(s.end() - (b_vec ? 1 : 2));
    y = c.add(OpKind::reshape, {y}, {{"shape", s}});
  }
  c.set_output(0, y);
}

// ---- Normalizations -------------------------------------------------------------------------

// A rank-2, 3 or 5 activation as NCHW (BatchNorm1d, InstanceNorm1d, BatchNorm3d); from_nchw
// restores the shape.
ir::ValueId as_nchw(NodeContext& c, ir::ValueId x, ir::Shape* original) {
  *original = c.value_shape(x);
  if (original->size() == 4) return x;
  if (original->size() < 2 || original->size() > 5) c.fail("input must have rank 2 to 5");
  ir::Shape s = *original;
  while (s.size() < 4) s.push_back(1);
  if (s.size() == 5) s = {s[0], s[1], s[2] * s[3], s[4]};  // depth and height merged
  return c.add(OpKind::reshape, {x}, {{"shape", s}}, "nchw");
}
ir::ValueId from_nchw(NodeContext& c, ir::ValueId y, const ir::Shape& original) {
  if (original.size() == 4) return y;
  return c.add(OpKind::reshape, {y}, {{"shape", original}});
}

void map_batch_norm(NodeContext& c) {
  if (c.attr_int("training_mode", 0) != 0) c.fail("training_mode is not supported");
  for (size_t k = 1; k < c.output_count(); ++k) {
    if (c.output_used(k)) c.fail("running statistics outputs are only defined in training");
  }
  ir::Shape original;
  const ir::ValueId x = as_nchw(c, c.value(0), &original);
  const bool direct = original.size() == 4;
  ir::ValueId y = c.add(OpKind::batch_norm, {x, c.value(1), c.value(2), c.value(3), c.value(4)},
                        {{"eps", c.attr_float("epsilon", 1e-5)}}, direct ? "" : "bn");
  c.set_output(0, from_nchw(c, y, original));
}

void map_instance_norm(NodeContext& c) {
  ir::Shape original;
  const ir::ValueId x = as_nchw(c, c.value(0), &original);
  const int64_t channels = original[1];
  ir::ValueId y = c.add(OpKind::group_norm, {x, c.value(1), c.value(2)},
                        {{"groups", channels}, {"eps", c.attr_float("epsilon", 1e-5)}},
                        original.size() == 4 ? "" : "gn");
  c.set_output(0, from_nchw(c, y, original));
}

// GroupNormalization (opset 18; 21 changed its parameters): x's C channels in num_groups groups,
// each normalised over its channels and the spatial axes, then scaled and shifted per channel.
// Opset 21's scale and bias hold C values; opset 18's held one per group, as its specification
// said (a C-long pair is read per channel there too: that is what exporters meant).
void map_group_norm(NodeContext& c) {
  if (!c.has_attr("num_groups")) c.fail("attribute 'num_groups' is required");
  const int64_t groups = c.attr_int("num_groups", 1);
  ir::Shape original;
  const ir::Shape xs = c.shape(0);
  if (xs.size() < 2)
    c.fail("input must have rank >= 2 ([N, C, ...]), got rank " + std::to_string(xs.size()));
  const int64_t channels = xs[1];
  if (groups < 1 || channels % groups != 0) {
    c.fail("num_groups " + std::to_string(groups) + " must divide the " + std::to_string(channels) +
           " channels");
  }
  auto per_channel = [&](size_t i, const char* what) {
    const ir::Shape ps = c.shape(i);
    if (ps.size() != 1 || (ps[0] != channels && ps[0] != groups)) {
      c.fail(std::string(what) + " must hold " + std::to_string(channels) + " (per channel) or " +
             std::to_string(groups) + " (per group, opset 18) values, got shape " +
             ir::to_string(ps));
    }
    if (ps[0] == channels) return c.value(i);
    std::vector<int64_t> group_of(static_cast<size_t>(channels));
    for (int64_t ch = 0; ch < channels; ++ch)
      group_of[static_cast<size_t>(ch)] = ch / (channels / groups);
    const ir::ValueId index = c.constant_value(HostTensor::ints({channels}, group_of), "group_of");
    return c.add(OpKind::gather, {c.value(i), index}, {{"axis", int64_t{0}}},
                 std::string(what) + "_per_channel");
  };
  const ir::ValueId gamma = per_channel(1, "scale"), beta = per_channel(2, "bias");
  const ir::ValueId x = as_nchw(c, c.value(0), &original);
  const ir::ValueId y = c.add(OpKind::group_norm, {x, gamma, beta},
                              {{"groups", groups}, {"eps", c.attr_float("epsilon", 1e-5)}},
                              original.size() == 4 ? "" : "gn");
  c.set_output(0, from_nchw(c, y, original));
}

void map_layer_norm(NodeContext& c) {
  for (size_t k = 1; k < c.output_count(); ++k) {
    if (c.output_used(k)) c.fail("the Mean and InvStdDev outputs are not supported");
  }
  const ir::Shape xs = c.shape(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), xs.size());
  int64_t d = 1;
  for (size_t k = static_cast<size_t>(axis); k < xs.size(); ++k) d *= xs[k];
  ir::ValueId x = c.value(0);
  const bool flat = axis != static_cast<int64_t>(xs.size()) - 1;
  auto param = [&](size_t i, float fill, const char* what) -> ir::ValueId {
    if (!c.has_input(i))
      return c.constant_value(
          HostTensor::floats({d}, std::vector<float>(static_cast<size_t>(d), fill)), what);
    if (c.is_constant(i)) {
      const HostTensor& t = c.constant(i);
      return c.constant_value(
          broadcast_tensor(t, ir::Shape(xs.begin() + axis, xs.end())).numel() == d
              ? reshaped(broadcast_tensor(t, ir::Shape(xs.begin() + axis, xs.end())), {d})
              : t,
          what);
    }
    if (c.shape(i) != ir::Shape{d})
      c.fail(std::string(what) + " must be constant or of shape [" + std::to_string(d) + "]");
    return c.value(i);
  };
  const ir::ValueId gamma = param(1, 1.0f, "scale"), beta = param(2, 0.0f, "bias");
  if (flat) {
    ir::Shape s(xs.begin(), xs.begin() + axis);
    s.push_back(d);
    x = c.add(OpKind::reshape, {x}, {{"shape", s}}, "flat");
  }
  ir::ValueId y = c.add(OpKind::layer_norm, {x, gamma, beta},
                        {{"eps", c.attr_float("epsilon", 1e-5)}}, flat ? "ln" : "");
  if (flat) y = c.add(OpKind::reshape, {y}, {{"shape", xs}});
  c.set_output(0, y);
}

// ---- Pools ----------------------------------------------------------------------------------

// A max pool of taps (dilated, or with Indices) gathers once per tap; beyond this many the import
// would balloon.
constexpr int64_t kMaxDilatedPoolTaps = 4096;

// A MaxPool whose window's taps lie `dilations` apart, or whose Indices output is read: the
// maximum, over the taps, of the strided rows and columns each tap reads from the input padded
// with -inf (one gather per tap row, one per tap). `ceil_mode` as for the undilated pool, over
// the dilated window's extent. `x` is NCHW (a 1-D pool's as [N, C, 1, W], kernel 1 on the first
// axis). With `indices`, also the position of each window's first maximum in the flattened input
// (ONNX's Indices: batch and channel included), kept beside the running maximum: a tap replaces
// it only where it is strictly greater, so ties keep the earliest tap in row-major order.
ir::ValueId tap_max_pool(NodeContext& c, ir::ValueId x, const std::vector<int64_t>& kernel,
                         const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                         const ir::Shape& spatial, Padding p, const std::string& suffix,
                         ir::ValueId* indices = nullptr) {
  if (kernel[0] * kernel[1] > kMaxDilatedPoolTaps) {
    c.fail("a window of " + std::to_string(kernel[0] * kernel[1]) + " taps; at most " +
           std::to_string(kMaxDilatedPoolTaps) + " are supported (one gather each)");
  }
  const ir::Shape xs = c.value_shape(x);
  if (indices && ir::num_elements(xs) > kMaxExactInteger)
    c.fail("the Indices of an input of " + ir::to_string(xs) +
           ": positions above 2^24 are not exact in fp32 storage");
  std::vector<int64_t> extent(2), out(2);
  const int64_t top = p.begin[0], left = p.begin[1];
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  for (size_t d = 0; d < 2; ++d) {
    extent[d] = (kernel[d] - 1) * dilations[d] + 1;
    const int64_t span = spatial[d] + p.begin[d] + p.end[d] - extent[d];
    if (span < 0) c.fail("the window is larger than the padded input");
    out[d] = (ceil_mode ? (span + strides[d] - 1) / strides[d] : span / strides[d]) + 1;
    if (ceil_mode && (out[d] - 1) * strides[d] >= spatial[d] + p.begin[d]) --out[d];
    p.end[d] = std::max(p.end[d], (out[d] - 1) * strides[d] + extent[d] - spatial[d] - p.begin[d]);
  }
  if (p.begin[0] + p.begin[1] + p.end[0] + p.end[1] > 0) {
    x = pad_spatial(c, x, {p.begin[0], p.begin[1], p.end[0], p.end[1]},
                    -std::numeric_limits<double>::infinity(), "pad");
  }
  auto at_of = [&](size_t d, int64_t tap) {  // the padded input's rows (columns) a tap reads
    std::vector<int64_t> at;
    for (int64_t o = 0; o < out[d]; ++o) at.push_back(tap * dilations[d] + o * strides[d]);
    return at;
  };
  auto taps_of = [&](size_t d, int64_t tap) {
    return c.constant_value(HostTensor::ints({out[d]}, at_of(d, tap)),
                            "taps" + std::to_string(d) + "_" + std::to_string(tap));
  };
  ir::ValueId y = ir::kNoValue, at = ir::kNoValue;
  int64_t t = 0;
  for (int64_t i = 0; i < kernel[0]; ++i) {
    const ir::ValueId rows = c.add(OpKind::gather, {x, taps_of(0, i)}, {{"axis", int64_t{2}}},
                                   "rows" + std::to_string(i));
    for (int64_t j = 0; j < kernel[1]; ++j, ++t) {
      const std::string tag = std::to_string(i) + "_" + std::to_string(j);
      const ir::ValueId tap =
          c.add(OpKind::gather, {rows, taps_of(1, j)}, {{"axis", int64_t{3}}}, "tap" + tag);
      if (indices) {
        // The tap's position in its plane of the unpadded input, per output pixel.
        std::vector<int64_t> pos;
        for (int64_t h : at_of(0, i))
          for (int64_t w : at_of(1, j)) pos.push_back((h - top) * spatial[1] + (w - left));
        const ir::ValueId here =
            c.constant_value(HostTensor::ints({out[0], out[1]}, pos), "position" + tag);
        at = t == 0
                 ? here
                 : c.add(OpKind::where, {c.compare(tap, "greater", y, "greater" + tag), here, at},
                         {}, "at" + tag);
      }
      const bool last = t + 1 == kernel[0] * kernel[1];
      y = t == 0 ? tap : c.add(OpKind::max, {y, tap}, {}, last ? suffix : "max" + tag);
    }
  }
  if (indices) {
    // Plus each plane's first element: (n * C + c) * H * W.
    std::vector<int64_t> planes;
    for (int64_t k = 0; k < xs[0] * xs[1]; ++k) planes.push_back(k * spatial[0] * spatial[1]);
    *indices = c.add(
        OpKind::add,
        {at, c.constant_value(HostTensor::ints({xs[0], xs[1], 1, 1}, planes), "plane_starts")}, {},
        "indices");
  }
  return y;
}

void map_pool(NodeContext& c) {
  const bool is_max = c.op_type() == "MaxPool";
  const bool with_indices = is_max && c.output_used(1);
  if (with_indices && c.attr_int("storage_order", 0) != 0)
    c.fail("storage_order 1 (column-major Indices) is not supported");
  const ir::Shape xs = c.shape(0);
  if (xs.size() == 5) {
    if (with_indices) c.fail("the Indices output of a 3-D pool is not supported");
    return map_pool3d(c);
  }
  if (xs.size() != 4 && xs.size() != 3) c.fail("only 1-D, 2-D and 3-D pooling is supported");
  const size_t r = xs.size() - 2;
  std::vector<int64_t> dilations = per_axis_attr(c, "dilations", r);
  const bool dilated =
      std::any_of(dilations.begin(), dilations.end(), [](int64_t d) { return d != 1; });
  if (dilated && !is_max) c.fail("dilations other than 1 are not supported");
  std::vector<int64_t> kernel = kernel_shape_attr(c, r);
  std::vector<int64_t> strides = per_axis_attr(c, "strides", r);
  ir::Shape spatial(xs.begin() + 2, xs.end());
  std::vector<int64_t> extent = kernel;  // the dilated window's span, which auto_pad covers
  for (size_t d = 0; d < r; ++d) extent[d] = (kernel[d] - 1) * dilations[d] + 1;
  Padding p = spatial_padding(c, spatial, extent, strides);
  ir::ValueId x = c.value(0);
  if (r == 1) {
    x = as_2d(c, x, "as2d");
    kernel.insert(kernel.begin(), 1);
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    spatial.insert(spatial.begin(), 1);
    p.begin.insert(p.begin.begin(), 0);
    p.end.insert(p.end.begin(), 0);
  }
  if (dilated || with_indices) {
    ir::ValueId indices = ir::kNoValue;
    ir::ValueId y = tap_max_pool(c, x, kernel, strides, dilations, spatial, p,
                                 r == 1 ? "pool2d" : "", with_indices ? &indices : nullptr);
    auto unflat = [&](ir::ValueId v, const char* suffix) {  // a 1-D pool's result back to 3-D
      if (r != 1) return v;
      ir::Shape s = c.value_shape(v);
      s.erase(s.begin() + 2);
      return c.add(OpKind::reshape, {v}, {{"shape", s}}, suffix);
    };
    if (with_indices) c.set_output(1, unflat(indices, "indices1d"));
    return c.set_output(0, unflat(y, ""));
  }
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = c.attr_int("count_include_pad", 0) != 0;
  const Padding explicit_pads = p;
  bool overhang = false;
  if (ceil_mode) {
    // Extra end padding makes floor division give the ceil-mode size; a last window that would
    // start in the end padding is dropped, as PyTorch does.
    for (size_t d = 0; d < 2; ++d) {
      const int64_t span = spatial[d] + p.begin[d] + p.end[d] - kernel[d];
      int64_t out = (span + strides[d] - 1) / strides[d] + 1;
      if ((out - 1) * strides[d] >= spatial[d] + p.begin[d]) --out;
      const int64_t extra = std::max<int64_t>(
          0, (out - 1) * strides[d] + kernel[d] - (spatial[d] + p.begin[d] + p.end[d]));
      overhang = overhang || extra > 0;
      p.end[d] += extra;
    }
  }
  // An average whose divisor the kernel cannot express (a ceil_mode window overhanging the
  // padding, which PyTorch leaves out of the divisor; asymmetric padding not counted) is the
  // window sum (zeros padded and counted) over a divisor map made at import.
  const bool asymmetric = p.begin[0] != p.end[0] || p.begin[1] != p.end[1] ||
                          std::min(p.begin[0], p.end[0]) * 2 > kernel[0] ||
                          std::min(p.begin[1], p.end[1]) * 2 > kernel[1];
  const bool divisor_map = !is_max && (overhang || (asymmetric && !include_pad));
  const std::vector<int64_t> sym =
      pool_padding(c, x, kernel, p.begin, p.end, is_max, include_pad || divisor_map);
  ir::Attrs attrs = {{"kernel", kernel}, {"stride", strides}, {"pad", sym}};
  if (!is_max) attrs.set("count_include_pad", int64_t{include_pad || divisor_map ? 1 : 0});
  ir::ValueId y = c.add(is_max ? OpKind::max_pool2d : OpKind::avg_pool2d, {x}, attrs,
                        r == 1 || divisor_map ? "pool2d" : "");
  if (divisor_map) {
    // Per axis, the taps of each window inside the input (count_include_pad 0) or inside the
    // input and its explicit padding (1); the map is their product over the window's size.
    const ir::Shape ys = c.value_shape(y);
    std::vector<std::vector<int64_t>> taps(2);
    for (size_t d = 0; d < 2; ++d) {
      const int64_t lo = include_pad ? -explicit_pads.begin[d] : 0;
      const int64_t hi = spatial[d] + (include_pad ? explicit_pads.end[d] : 0);
      for (int64_t o = 0; o < ys[2 + d]; ++o) {
        const int64_t start = o * strides[d] - p.begin[d];
        taps[d].push_back(std::min(start + kernel[d], hi) - std::max(start, lo));
      }
    }
    std::vector<float> scale;
    for (int64_t i : taps[0])
      for (int64_t j : taps[1])
        scale.push_back(static_cast<float>(static_cast<double>(kernel[0] * kernel[1]) /
                                           static_cast<double>(std::max<int64_t>(1, i * j))));
    const ir::ValueId map = c.constant_value(HostTensor::floats({ys[2], ys[3]}, scale), "divisor");
    y = c.add(OpKind::mul, {y, map}, {}, r == 1 ? "averaged" : "");
  }
  if (r == 1) {
    ir::Shape s = c.value_shape(y);
    s.erase(s.begin() + 2);
    y = c.add(OpKind::reshape, {y}, {{"shape", s}});
  }
  c.set_output(0, y);
}

void map_global_pool(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  if (xs.size() < 3) c.fail("input must have rank >= 3");
  if (c.op_type() == "GlobalAveragePool" && xs.size() == 4) {
    const ir::ValueId y = c.add(OpKind::global_avg_pool, {c.value(0)}, {}, "pool");
    return c.set_output(0, c.add(OpKind::reshape, {y}, {{"shape", ir::Shape{xs[0], xs[1], 1, 1}}}));
  }
  std::vector<int64_t> axes;
  for (size_t d = 2; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  const OpKind op = c.op_type() == "GlobalMaxPool" ? OpKind::reduce_max : OpKind::reduce_mean;
  c.set_output(0, c.add(op, {c.value(0)}, {{"axes", axes}, {"keepdims", int64_t{1}}}));
}

// ---- Reductions -----------------------------------------------------------------------------

// The reduced axes (sorted), or nullopt for a no-op (empty axes with noop_with_empty_axes).
std::optional<std::vector<int64_t>> reduce_axes(NodeContext& c, size_t rank) {
  const int64_t input_from = c.op_type() == "ReduceSum" ? 13 : 18;
  std::vector<int64_t> axes;
  if (c.opset() < input_from) {
    axes = c.attr_ints("axes", {});
  } else if (c.has_input(1)) {
    axes = c.constant(1).to_ints();
  }
  if (axes.empty()) {
    if (c.attr_int("noop_with_empty_axes", 0) != 0) return std::nullopt;
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  axes = normalize_axes(c, axes, rank);
  std::sort(axes.begin(), axes.end());
  return axes;
}

// ReduceMean, ReduceSum and ReduceMax are IR ops; the norms (F.normalize's ReduceL2, and
// ReduceL1), ReduceSumSquare, ReduceMin, ReduceLogSum and ReduceLogSumExp are written with them.
// Empty axes with noop_with_empty_axes pass the input through, as ONNX's reference does for every
// reduction.
void map_reduce(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  const auto axes = reduce_axes(c, xs.size());
  if (!axes) return c.set_output(0, c.value(0));
  const std::string& op = c.op_type();
  const ir::Attrs attrs = {{"axes", *axes}, {"keepdims", c.attr_int("keepdims", 1)}};
  const ir::ValueId x = c.value(0);
  auto reduce = [&](OpKind kind, ir::ValueId v, const char* suffix) {
    return c.add(kind, {v}, attrs, suffix);
  };
  if (op == "ReduceMean") return c.set_output(0, reduce(OpKind::reduce_mean, x, ""));
  if (op == "ReduceSum") return c.set_output(0, reduce(OpKind::reduce_sum, x, ""));
  if (op == "ReduceMax") return c.set_output(0, reduce(OpKind::reduce_max, x, ""));
  if (op == "ReduceMin") {
    const ir::ValueId max_of_neg =
        reduce(OpKind::reduce_max, c.add(OpKind::neg, {x}, {}, "neg"), "max");
    return c.set_output(0, c.add(OpKind::neg, {max_of_neg}));
  }
  if (op == "ReduceLogSum")
    return c.set_output(0, c.add(OpKind::log, {reduce(OpKind::reduce_sum, x, "sum")}));
  if (op == "ReduceL1")
    return c.set_output(0, reduce(OpKind::reduce_sum, c.add(OpKind::abs, {x}, {}, "abs"), ""));
  if (op == "ReduceLogSumExp") {
    // m + log(sum(exp(x - m))) with m the maximum; where m is infinite (a row of -inf, or a +inf
    // element) the result is m itself, as torch.logsumexp gives, not inf - inf.
    const ir::Attrs kept = {{"axes", *axes}, {"keepdims", int64_t{1}}};
    const ir::ValueId m = c.add(OpKind::reduce_max, {x}, kept, "max");
    const double big = std::numeric_limits<float>::max();
    const ir::ValueId finite_m =
        c.add(OpKind::clip, {m}, {{"min", -big}, {"max", big}}, "finite_max");
    const ir::ValueId e =
        c.add(OpKind::exp, {c.add(OpKind::sub, {x, finite_m}, {}, "shifted")}, {}, "exp");
    const ir::ValueId sum = c.add(OpKind::reduce_sum, {e}, kept, "sum");
    const ir::ValueId lse =
        c.add(OpKind::add, {c.add(OpKind::log, {sum}, {}, "log"), finite_m}, {}, "lse");
    const ir::ValueId infinite =
        c.compare(c.add(OpKind::abs, {m}, {}, "abs_max"), "equal",
                  c.float_constant(std::numeric_limits<float>::infinity(), "inf"), "infinite");
    const bool keep = c.attr_int("keepdims", 1) != 0;
    ir::ValueId y = c.add(OpKind::where, {infinite, m, lse}, {}, keep ? "" : "kept");
    if (!keep) {
      ir::Shape dropped;
      for (size_t d = 0; d < xs.size(); ++d)
        if (std::find(axes->begin(), axes->end(), static_cast<int64_t>(d)) == axes->end())
          dropped.push_back(xs[d]);
      y = c.add(OpKind::reshape, {y}, {{"shape", dropped}});
    }
    return c.set_output(0, y);
  }
  if (op == "ReduceSumSquare" || op == "ReduceL2") {
    const ir::ValueId sq = c.add(OpKind::mul, {x, x}, {}, "square");
    if (op == "ReduceSumSquare") return c.set_output(0, reduce(OpKind::reduce_sum, sq, ""));
    return c.set_output(0, c.add(OpKind::sqrt, {reduce(OpKind::reduce_sum, sq, "sum")}));
  }
  c.fail("is supported on constants only");
}

bool fold_reduce(NodeContext& c) {
  // mapped, with a constant operand
  if (c.op_type() == "ReduceLogSumExp" || c.op_type() == "ReduceLogSum") return false;
  const HostTensor& x = c.constant(0);
  const auto axes = reduce_axes(c, x.shape.size());
  if (!axes) {
    c.set_constant_output(0, x);
    return true;
  }
  const bool keep = c.attr_int("keepdims", 1) != 0;
  ir::Shape kept = x.shape, out_shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    const bool reduced =
        std::find(axes->begin(), axes->end(), static_cast<int64_t>(d)) != axes->end();
    if (reduced) kept[d] = 1;
    if (!reduced)
      out_shape.push_back(x.shape[d]);
    else if (keep)
      out_shape.push_back(1);
  }
  const std::string& op = c.op_type();
  const int64_t out_n = ir::num_elements(kept);
  const bool is_max = op == "ReduceMax", is_min = op == "ReduceMin", is_prod = op == "ReduceProd";
  const bool is_l1 = op == "ReduceL1", is_l2 = op == "ReduceL2",
             is_square = op == "ReduceSumSquare";
  std::vector<double> acc(static_cast<size_t>(out_n), is_max    ? -INFINITY
                                                      : is_min  ? INFINITY
                                                      : is_prod ? 1.0
                                                                : 0.0);
  std::vector<int64_t> st(kept.size(), 1);
  for (size_t d = kept.size(); d-- > 1;) st[d - 1] = st[d] * kept[d];
  std::vector<int64_t> in_st(x.shape.size(), 1);
  for (size_t d = x.shape.size(); d-- > 1;) in_st[d - 1] = in_st[d] * x.shape[d];
  for (int64_t k = 0; k < x.numel(); ++k) {
    int64_t o = 0;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      const int64_t idx = (k / in_st[d]) % x.shape[d];
      if (kept[d] != 1 || x.shape[d] == 1) o += (kept[d] == 1 ? 0 : idx) * st[d];
    }
    double& a = acc[static_cast<size_t>(o)];
    const double v = x.number(k);
    a = is_max               ? std::max(a, v)
        : is_min             ? std::min(a, v)
        : is_prod            ? a * v
        : is_l1              ? a + std::fabs(v)
        : is_l2 || is_square ? a + v * v
                             : a + v;
  }
  const double count =
      static_cast<double>(x.numel()) / static_cast<double>(std::max<int64_t>(out_n, 1));
  if (op == "ReduceMean") {
    for (double& a : acc) a /= count;
  }
  if (is_l2) {
    for (double& a : acc) a = std::sqrt(a);
  }
  if (x.is_float()) {
    std::vector<float> f(acc.begin(), acc.end());
    c.set_constant_output(0, HostTensor::floats(out_shape, f));
  } else {
    std::vector<int64_t> i(acc.size());
    for (size_t k = 0; k < acc.size(); ++k) i[k] = static_cast<int64_t>(acc[k]);
    c.set_constant_output(0, HostTensor::ints(out_shape, i));
  }
  return true;
}

// ---- CumSum ---------------------------------------------------------------------------------

// The summed axis: a constant scalar input (a one-element tensor is accepted too).
int64_t cumsum_axis(NodeContext& c, size_t rank) {
  const HostTensor& axis = c.constant(1);
  if (axis.numel() != 1 || axis.is_float()) c.fail("axis must be one integer");
  return normalize_axis(c, axis.integer(0), rank);
}

void map_cumsum(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  c.set_output(0, c.add(OpKind::cumsum, {c.value(0)},
                        {{"axis", cumsum_axis(c, xs.size())},
                         {"exclusive", c.attr_int("exclusive", 0) != 0 ? int64_t{1} : int64_t{0}},
                         {"reverse", c.attr_int("reverse", 0) != 0 ? int64_t{1} : int64_t{0}}}));
}

bool fold_cumsum(NodeContext& c) {
  HostTensor t = c.constant(0);
  const size_t axis = static_cast<size_t>(cumsum_axis(c, t.shape.size()));
  const bool exclusive = c.attr_int("exclusive", 0) != 0, reverse = c.attr_int("reverse", 0) != 0;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= t.shape[d];
  for (size_t d = axis + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
  const int64_t len = t.shape[axis];
  // In double, as the run-time kernel: integers stay exact up to 2^53, then saturate.
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k) {
      double sum = 0.0;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t i = reverse ? len - 1 - step : step;
        const int64_t at = (o * len + i) * inner + k;
        const double v = t.number(at);
        if (!exclusive) sum += v;
        if (t.is_float()) {
          t.f[static_cast<size_t>(at)] = static_cast<float>(sum);
        } else {
          t.i[static_cast<size_t>(at)] = saturating_int64(sum);
        }
        if (exclusive) sum += v;
      }
    }
  }
  c.set_constant_output(0, t);
  return true;
}

// ---- Resize / Upsample ----------------------------------------------------------------------

// Resize's scales per axis and output sizes: from `scales` (output floor(in * scale)) or from
// `sizes` (scale out / in); Upsample's from its scales input or attribute.
struct ResizeTarget {
  std::vector<double> scales;
  ir::Shape sizes;
};

ResizeTarget resize_target(NodeContext& c, const ir::Shape& xs) {
  ResizeTarget t;
  const size_t rank = xs.size();
  if (c.op_type() == "Upsample") {
    if (c.opset() < 9) {
      for (float f : c.attr_floats("scales")) t.scales.push_back(f);
    } else {
      for (float f : c.constant(1).to_floats()) t.scales.push_back(f);
    }
  } else {
    // Opset 18's `axes`: scales or sizes for the axes listed only; the others keep their size.
    const std::vector<int64_t> axes = listed_axes(c, rank);
    const std::string count = std::to_string(axes.size());
    // Resize: (X, roi, scales, sizes) from opset 11; (X, scales) in opset 10.
    const size_t scales_input = c.opset() < 11 ? 1 : 2;
    if (c.has_input(scales_input) && c.constant(scales_input).numel() > 0) {
      const std::vector<float> given = c.constant(scales_input).to_floats();
      if (given.size() != axes.size())
        c.fail("needs " + count + " scales or " + count + " sizes (one per resized axis)");
      t.scales.assign(rank, 1.0);
      for (size_t k = 0; k < axes.size(); ++k) t.scales[static_cast<size_t>(axes[k])] = given[k];
    } else if (c.has_input(3)) {
      const std::vector<int64_t> given = c.constant(3).to_ints();
      if (given.size() != axes.size())
        c.fail("sizes must have " + count + (axes.size() == 1 ? " entry" : " entries"));
      t.sizes.assign(xs.begin(), xs.end());
      for (size_t k = 0; k < axes.size(); ++k) {
        if (given[k] < 1) c.fail("sizes must be >= 1");
        check_window_attr(c, "sizes", given[k]);
        t.sizes[static_cast<size_t>(axes[k])] = given[k];
      }
      for (size_t d = 0; d < rank; ++d)
        t.scales.push_back(static_cast<double>(t.sizes[d]) / static_cast<double>(xs[d]));
      // keep_aspect_ratio_policy (opset 18): one scale for every listed axis, the smallest
      // (not_larger) or largest (not_smaller) of theirs, each size rounded half up from it.
      const std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
      if (policy == "not_larger" || policy == "not_smaller") {
        double common = t.scales[static_cast<size_t>(axes[0])];
        for (int64_t a : axes) {
          const double s = t.scales[static_cast<size_t>(a)];
          common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
        }
        for (int64_t a : axes) {
          const size_t d = static_cast<size_t>(a);
          t.scales[d] = common;
          t.sizes[d] = saturating_int64(
              std::max(1.0, std::floor(common * static_cast<double>(xs[d]) + 0.5)));
          check_window_attr(c, "sizes", t.sizes[d]);
        }
      } else if (policy != "stretch") {
        c.fail("keep_aspect_ratio_policy '" + policy +
               "' is unknown (stretch, not_larger, not_smaller)");
      }
    }
  }
  if (t.scales.size() != rank) {
    c.fail("needs " + std::to_string(rank) + " scales or " + std::to_string(rank) +
           " sizes (one per axis of the input)");
  }
  for (double v : t.scales) {
    if (!(v > 0) || !std::isfinite(v)) c.fail("scales must be positive and finite");
  }
  if (t.sizes.empty()) {
    for (size_t d = 0; d < rank; ++d) {
      const double out = std::floor(static_cast<double>(xs[d]) * t.scales[d]);
      if (out < 1) c.fail("a scale would make an axis empty");
      t.sizes.push_back(saturating_int64(out));  // shape inference refuses what overflows
    }
  }
  return t;
}

// Output pixel o's coordinate in the input, on an axis of `in` resized to `out` by `scale`, in
// the coordinate transformation mode `coord` (ONNX Resize; not tf_crop_and_resize).
double resize_source(int64_t o, int64_t in, int64_t out, double scale, const std::string& coord) {
  const double od = static_cast<double>(o);
  if (coord == "align_corners")
    return out == 1 ? 0.0 : od * static_cast<double>(in - 1) / static_cast<double>(out - 1);
  if (coord == "asymmetric") return od / scale;
  if (coord == "tf_half_pixel_for_nn") return (od + 0.5) / scale;
  if (coord == "pytorch_half_pixel" && out == 1) return 0.0;
  return (od + 0.5) / scale - 0.5;  // half_pixel, pytorch_half_pixel
}

// How a linear or cubic Resize weighs the input pixels around a source coordinate.
struct Interpolation {
  bool cubic = false;
  double cubic_a = -0.75;        // cubic_coeff_a (PyTorch's bicubic uses -0.75 too)
  bool exclude_outside = false;  // cubic: taps outside the axis get weight 0, the rest renormalised
};

// Keys' cubic convolution kernel at distance d from the source coordinate (ONNX Resize cubic).
double cubic_weight(double d, double a) {
  d = std::fabs(d);
  if (d <= 1.0) return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
  if (d < 2.0) return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
  return 0.0;
}

// One axis's interpolation as a matrix [out, in] (ONNX Resize, modes linear and cubic): row o
// holds the weights of the input pixels around o's source coordinate. Linear: the two pixels
// around it, the coordinate clamped to the axis (ONNX's edge rule and PyTorch's bilinear agree on
// it). Cubic: the four pixels floor(x) - 1 .. floor(x) + 2, those past an edge read the edge pixel
// (ONNX pads with edge values, PyTorch's bicubic clamps its indices), or with exclude_outside get
// no weight.
HostTensor resize_matrix(int64_t in, int64_t out, double scale, const std::string& coord,
                         const Interpolation& how) {
  std::vector<float> m(static_cast<size_t>(out * in), 0.0f);
  auto add = [&](int64_t o, int64_t i, double w) {
    m[static_cast<size_t>(o * in + std::clamp<int64_t>(i, 0, in - 1))] += static_cast<float>(w);
  };
  for (int64_t o = 0; o < out; ++o) {
    const double source = resize_source(o, in, out, scale, coord);
    if (!how.cubic) {
      const double x = std::clamp(source, 0.0, static_cast<double>(in - 1));
      const int64_t i0 = static_cast<int64_t>(std::floor(x));
      const double f = x - static_cast<double>(i0);
      add(o, i0, 1.0 - f);
      add(o, i0 + 1, f);
      continue;
    }
    const int64_t i0 = static_cast<int64_t>(std::floor(source));
    const double f = source - static_cast<double>(i0);
    double w[4], total = 0.0;
    for (int k = 0; k < 4; ++k) {
      const int64_t i = i0 - 1 + k;
      w[k] =
          how.exclude_outside && (i < 0 || i >= in) ? 0.0 : cubic_weight(f + 1.0 - k, how.cubic_a);
      total += w[k];
    }
    for (int k = 0; k < 4; ++k) add(o, i0 - 1 + k, how.exclude_outside ? w[k] / total : w[k]);
  }
  return HostTensor::floats({out, in}, std::move(m));
}

bool is_identity(const HostTensor& m) {
  if (m.shape[0] != m.shape[1]) return false;
  for (int64_t r = 0; r < m.shape[0]; ++r)
    for (int64_t k = 0; k < m.shape[1]; ++k)
      if (m.f[static_cast<size_t>(r * m.shape[1] + k)] != (r == k ? 1.0f : 0.0f)) return false;
  return true;
}

// Linear and cubic resizing (bilinear, bicubic, trilinear, 1-D linear) are separable: a linear
// layer over the last axis with its matrix, then one over each other spatial axis moved last by
// a transpose. Each output reads two (four) input pixels per axis, so the dense products spend
// in/2 (in/4) times the multiplies a gather would; they are small beside the convolutions of the
// segmentation heads that upsample their logits this way.
void map_matrix_resize(NodeContext& c, const ir::Shape& xs, const ResizeTarget& t,
                       const std::string& coord, const Interpolation& how) {
  if (t.sizes[0] != xs[0] || t.sizes[1] != xs[1]) c.fail("only the spatial axes may be resized");
  constexpr int64_t kMaxMatrixElements = int64_t{1} << 26;  // 256 MiB of fp32 per axis
  const size_t rank = xs.size();
  for (size_t d = 2; d < rank; ++d) {
    if (t.sizes[d] > kMaxMatrixElements / xs[d])
      c.fail("resizing " + std::to_string(xs[d]) + " pixels to " + std::to_string(t.sizes[d]) +
             " needs a larger interpolation matrix than 2^26 elements");
  }
  static const char* const kAxisNames[] = {"n", "c", "d", "h", "w"};
  ir::ValueId y = c.value(0);
  for (size_t d = rank; d-- > 2;) {
    const HostTensor m = resize_matrix(xs[d], t.sizes[d], t.scales[d], coord, how);
    if (is_identity(m)) continue;
    const std::string axis = kAxisNames[d + 5 - rank];
    std::vector<int64_t> swap(rank);
    for (size_t k = 0; k < rank; ++k) swap[k] = static_cast<int64_t>(k);
    std::swap(swap[d], swap[rank - 1]);
    if (d != rank - 1) y = c.add(OpKind::transpose, {y}, {{"perm", swap}}, "to_" + axis + "_last");
    y = c.add(OpKind::linear, {y, c.constant_value(m, "resize_" + axis)}, {}, axis);
    if (d != rank - 1)
      y = c.add(OpKind::transpose, {y}, {{"perm", swap}}, "from_" + axis + "_last");
  }
  c.set_output(0, y);
}

// Source pixel of each of `out` output pixels on an axis of `in` (mode nearest): the coordinate
// transform, then nearest_mode's rounding, clamped to the axis.
std::vector<int64_t> nearest_sources(int64_t in, int64_t out, double scale,
                                     const std::string& coord, const std::string& rounding) {
  std::vector<int64_t> src(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const double x = resize_source(o, in, out, scale, coord);
    double i = 0.0;
    const bool half = x - std::floor(x) == 0.5;
    if (rounding == "floor") {
      i = std::floor(x);
    } else if (rounding == "ceil") {
      i = std::ceil(x);
    } else if (rounding == "round_prefer_floor") {
      i = half ? std::floor(x) : std::round(x);
    } else {  // round_prefer_ceil
      i = half ? std::ceil(x) : std::round(x);
    }
    src[static_cast<size_t>(o)] =
        static_cast<int64_t>(std::clamp(i, 0.0, static_cast<double>(in - 1)));
  }
  return src;
}

// Nearest resizing to any size: a gather of the source pixels along each resized spatial axis,
// or (4-D) the IR's upsample_nearest2d where both axes repeat each pixel the same integer number
// of times.
void map_nearest_resize(NodeContext& c, const ir::Shape& xs, const ResizeTarget& t,
                        const std::string& coord) {
  if (t.sizes[0] != xs[0] || t.sizes[1] != xs[1]) c.fail("only the spatial axes may be resized");
  const size_t rank = xs.size();
  const std::string rounding =
      c.op_type() == "Upsample" ? "floor" : c.attr_string("nearest_mode", "round_prefer_floor");
  if (rounding != "floor" && rounding != "ceil" && rounding != "round_prefer_floor" &&
      rounding != "round_prefer_ceil")
    c.fail("unknown nearest_mode '" + rounding + "'");
  for (size_t d = 2; d < rank; ++d) {
    if (t.sizes[d] <= kMaxFoldedElements) continue;
    // No index table that large: an integer factor goes to upsample_nearest2d, whose shape
    // inference bounds the result.
    if (rank != 4 || t.scales[2] != t.scales[3] || t.scales[2] != std::floor(t.scales[2]))
      c.fail("an output axis of more than 2^27 pixels needs an equal integer scale of H and W");
    return c.set_output(0, c.add(OpKind::upsample_nearest2d, {c.value(0)},
                                 {{"scale", saturating_int64(t.scales[2])}}));
  }
  std::vector<std::vector<int64_t>> src(rank);
  for (size_t d = 2; d < rank; ++d)
    src[d] = nearest_sources(xs[d], t.sizes[d], t.scales[d], coord, rounding);
  auto repeats = [&](size_t d, int64_t k) {  // every pixel k times, in order
    if (t.sizes[d] != k * xs[d]) return false;
    for (int64_t o = 0; o < t.sizes[d]; ++o)
      if (src[d][static_cast<size_t>(o)] != o / k) return false;
    return true;
  };
  const int64_t k = t.sizes[2] / xs[2];
  if (rank == 4 && k >= 1 && repeats(2, k) && repeats(3, k)) {
    if (k == 1) return c.set_output(0, c.value(0));
    return c.set_output(0, c.add(OpKind::upsample_nearest2d, {c.value(0)}, {{"scale", k}}));
  }
  static const char* const kAxisNames[] = {"n", "c", "d", "h", "w"};
  ir::ValueId y = c.value(0);
  for (size_t d = 2; d < rank; ++d) {
    if (repeats(d, 1)) continue;
    const std::string axis = kAxisNames[d + 5 - rank];
    const ir::ValueId idx =
        c.constant_value(HostTensor::ints({t.sizes[d]}, src[d]), "source_" + axis);
    y = c.add(OpKind::gather, {y, idx}, {{"axis", static_cast<int64_t>(d)}}, axis);
  }
  c.set_output(0, y);
}

// Resize and Upsample: nearest (map_nearest_resize), linear or cubic (bilinear, bicubic:
// map_matrix_resize), to any size.
void map_resize(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  if (xs.size() < 3 || xs.size() > 5)
    c.fail("only 3-D to 5-D inputs ([N, C, W], [N, C, H, W], [N, C, D, H, W]) are resized");
  std::string mode = c.attr_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";  // Upsample before opset 9
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    c.fail("mode '" + mode + "' is not supported (nearest, linear and cubic)");
  // Upsample predates coordinate modes: its source coordinate is dst / scale.
  const std::string coord = c.op_type() == "Upsample"
                                ? "asymmetric"
                                : c.attr_string("coordinate_transformation_mode", "half_pixel");
  const bool linear_coord = coord == "half_pixel" || coord == "pytorch_half_pixel" ||
                            coord == "asymmetric" || coord == "align_corners";
  const bool nearest_coord = linear_coord || coord == "tf_half_pixel_for_nn";
  if (!(mode == "nearest" ? nearest_coord : linear_coord))
    c.fail("coordinate_transformation_mode '" + coord + "' is not supported for mode " + mode);
  if (c.attr_int("antialias", 0) != 0) c.fail("antialias is not supported");
  const ResizeTarget t = resize_target(c, xs);
  if (mode != "nearest") {
    Interpolation how;
    how.cubic = mode == "cubic";
    how.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
    how.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
    return map_matrix_resize(c, xs, t, coord, how);
  }
  map_nearest_resize(c, xs, t, coord);
}

}  // namespace

void add_nn_mappings(std::vector<OpMapping>& t) {
  t.push_back({"Conv", map_conv, nullptr});
  t.push_back({"Gemm", map_gemm, nullptr});
  t.push_back({"MatMul", map_matmul, nullptr});
  t.push_back({"BatchNormalization", map_batch_norm, nullptr});
  t.push_back({"InstanceNormalization", map_instance_norm, nullptr});
  t.push_back({"GroupNormalization", map_group_norm, nullptr});
  t.push_back({"LayerNormalization", map_layer_norm, nullptr});
  t.push_back({"MaxPool", map_pool, nullptr});
  t.push_back({"AveragePool", map_pool, nullptr});
  t.push_back({"GlobalAveragePool", map_global_pool, nullptr});
  t.push_back({"GlobalMaxPool", map_global_pool, nullptr});
  for (const char* op :
       {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum"})
    t.push_back({op, map_reduce, fold_reduce});
  t.push_back({"CumSum", map_cumsum, fold_cumsum});
  t.push_back({"Resize", map_resize, nullptr});
  t.push_back({"Upsample", map_resize, nullptr});
}

}  // namespace cuvil::bench::onnx_import
