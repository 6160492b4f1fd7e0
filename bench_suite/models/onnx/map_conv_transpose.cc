// ConvTranspose (PyTorch's ConvTranspose1d/2d/3d: U-Net and GAN decoders, vocoders, 3-D U-Nets) as
// an ordinary convolution, so every conv kernel, pass and knob serves it. Along an axis of stride s
// the transposed convolution's uncropped output at s * q + r (phase r) is a correlation of the
// input with the taps r, r + s, r + 2s, ... reversed; one convolution with s_h * s_w times the
// output channels computes every phase at once, a pixel shuffle interleaves them and a slice crops
// the pads. A kernel no larger than the stride (k = s: U-Net's up-convolutions) becomes a 1x1
// convolution; DCGAN's k = 4, s = 2 a 2x2 one. Dilated kernels get zeros between their taps.
#include <onnx/defs/attr_proto_util.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/importer.h"
#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"
#include "bench_suite/models/onnx/window_attrs.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// One spatial axis of the transposed convolution and of the convolution that computes it.
struct TransposedAxis {
  int64_t in = 1, span = 1, stride = 1;  // input pixels, dilated kernel span, stride
  int64_t out = 1;                       // output pixels
  int64_t taps = 1;                      // ceil(span / stride): taps of every phase's kernel
  int64_t conv_begin = 0;                // the convolution's padding
  int64_t conv_end = 0;
  int64_t conv_out = 1;  // its outputs; the interleaved phases are stride * conv_out long
  int64_t crop = 0;      // where the output starts in the interleaved phases

  // pb, pe: ONNX's pads (>= 0); op: output_padding.
  TransposedAxis(int64_t in_, int64_t span_, int64_t stride_, int64_t pb, int64_t pe, int64_t op)
      : in(in_), span(span_), stride(stride_) {
    out = stride * (in - 1) + op + span - pb - pe;
    taps = ceil_div(span, stride);
    // Whole strides of begin padding crop whole convolution outputs: skip them (at most the
    // taps - 1 outputs that read only the convolution's own padding).
    const int64_t skip = std::min(pb / stride, taps - 1);
    conv_begin = taps - 1 - skip;
    crop = pb - stride * skip;
    const int64_t needed = ceil_div(crop + out, stride);  // outputs the crop reaches
    conv_end = std::max<int64_t>(0, needed + taps - 1 - in - conv_begin);
    conv_out = in + conv_begin + conv_end - taps + 1;
  }
};

// The convolution's weight [M * sd * sh * sw, C / g, Kd, Kh, Kw] from ConvTranspose's
// [C, M / g, kd, kh, kw] (rank 5; a 2-D kernel has kd = 1, a 1-D one kh = 1 too): output channel
// (gi, rd, rh, rw, m), group outermost as a grouped convolution needs, holds at tap (jd, jh, jw)
// the transposed kernel's tap (rd + sd * (Kd - 1 - jd), ...) of the dilated kernel, zero past its
// span or between dilated taps.
HostTensor phase_weights(const HostTensor& w, int64_t groups, const TransposedAxis* const axes[3],
                         const int64_t dilations[3]) {
  const int64_t c = w.shape[0], mg = w.shape[1], kd = w.shape[2], kh = w.shape[3], kw = w.shape[4];
  const TransposedAxis &ad = *axes[0], &ah = *axes[1], &aw = *axes[2];
  const int64_t cg = c / groups, sd = ad.stride, sh = ah.stride, sw = aw.stride;
  const int64_t td = ad.taps, th = ah.taps, tw = aw.taps;
  check_fold_size({groups * mg, sd, sh, sw, cg, td, th, tw});  // before any product can overflow
  const ir::Shape shape = {groups * mg * sd * sh * sw, cg, td, th, tw};
  std::vector<float> out(static_cast<size_t>(ir::num_elements(shape)), 0.0f);
  // Tap t of the dilated span is kernel tap t / d where t % d == 0.
  auto source = [](int64_t t, int64_t span, int64_t d) {
    return t < span && t % d == 0 ? t / d : -1;
  };
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t m = 0; m < mg; ++m)
      for (int64_t rd = 0; rd < sd; ++rd)
        for (int64_t rh = 0; rh < sh; ++rh)
          for (int64_t rw = 0; rw < sw; ++rw) {
            const int64_t oc = (((g * sd + rd) * sh + rh) * sw + rw) * mg + m;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t jd = 0; jd < td; ++jd) {
                const int64_t id = source(rd + sd * (td - 1 - jd), ad.span, dilations[0]);
                if (id < 0) continue;
                for (int64_t jh = 0; jh < th; ++jh) {
                  const int64_t ih = source(rh + sh * (th - 1 - jh), ah.span, dilations[1]);
                  if (ih < 0) continue;
                  for (int64_t jw = 0; jw < tw; ++jw) {
                    const int64_t iw = source(rw + sw * (tw - 1 - jw), aw.span, dilations[2]);
                    if (iw < 0) continue;
                    out[static_cast<size_t>((((oc * cg + ci) * td + jd) * th + jh) * tw + jw)] =
                        w.f[static_cast<size_t>(
                            ((((g * cg + ci) * mg + m) * kd + id) * kh + ih) * kw + iw)];
                  }
                }
              }
          }
  return HostTensor::floats(shape, std::move(out));
}

// ONNX's pads of each spatial axis: `pads`, or those `output_shape` or auto_pad imply
// (total = s (in - 1) + output_padding + span - out, split as the specification says).
void transposed_pads(NodeContext& c, const ir::Shape& in, const std::vector<int64_t>& span,
                     const std::vector<int64_t>& strides, const std::vector<int64_t>& op,
                     std::vector<int64_t>& pb, std::vector<int64_t>& pe) {
  const size_t r = in.size();
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER")
    c.fail("unknown auto_pad '" + auto_pad + "'");
  std::vector<int64_t> target = c.attr_ints("output_shape", {});
  if (target.size() == r + 2) target.erase(target.begin(), target.begin() + 2);
  if (!target.empty() && target.size() != r)
    c.fail("output_shape must have " + std::to_string(r) + " entries");
  if (target.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
    for (size_t d = 0; d < r; ++d) target.push_back(in[d] * strides[d]);  // in x stride
  }
  pb.assign(r, 0);
  pe.assign(r, 0);
  if (!target.empty()) {
    for (size_t d = 0; d < r; ++d) {
      check_window_attr(c, "output_shape", target[d]);
      if (target[d] < 1) c.fail("output_shape entries must be >= 1");
      const int64_t total = strides[d] * (in[d] - 1) + op[d] + span[d] - target[d];
      if (total < 0) {
        c.fail("output_shape " + std::to_string(target[d]) +
               " is larger than the full transposed convolution (" +
               std::to_string(target[d] + total) + "): negative padding is not supported");
      }
      const bool upper = auto_pad == "SAME_UPPER";
      pb[d] = upper ? total / 2 : total - total / 2;
      pe[d] = total - pb[d];
    }
    return;
  }
  if (auto_pad == "VALID") return;
  const std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (pads.size() != 2 * r) c.fail("pads must have " + std::to_string(2 * r) + " entries");
  for (size_t d = 0; d < r; ++d) {
    pb[d] = pads[d];
    pe[d] = pads[d + r];
    if (pb[d] < 0 || pe[d] < 0) c.fail("negative pads are not supported");
    check_window_attr(c, "pads", std::max(pb[d], pe[d]));
  }
}

// The 3-D transposed convolution: one 3-D Conv (imported through the table, which runs it as
// 2-D convolutions per depth tap) computes every phase; the phases interleave channels-last.
ir::ValueId conv_transpose_3d(NodeContext& c, const HostTensor& conv_w,
                              const std::vector<float>& phase_bias,
                              const TransposedAxis* const axes[3], int64_t groups, int64_t mg) {
  const ir::Shape xs = c.shape(0);
  onnx::NodeProto conv;
  conv.set_op_type("Conv");
  std::vector<int64_t> pads(6);
  for (size_t d = 0; d < 3; ++d) {
    pads[d] = axes[d]->conv_begin;
    pads[d + 3] = axes[d]->conv_end;
  }
  *conv.add_attribute() = onnx::MakeAttribute("pads", pads);
  *conv.add_attribute() = onnx::MakeAttribute("group", groups);
  std::vector<ImportedValue> inputs = {c.input(0), ImportedValue::of(conv_w)};
  if (!phase_bias.empty()) {
    inputs.push_back(ImportedValue::of(
        HostTensor::floats({static_cast<int64_t>(phase_bias.size())}, phase_bias)));
  }
  ir::ValueId y = c.import_composed(conv, inputs, 1)[0].id;
  const int64_t n = xs[0], m = mg * groups;
  const TransposedAxis &ad = *axes[0], &ah = *axes[1], &aw = *axes[2];
  y = c.add(OpKind::transpose, {y}, {{"perm", std::vector<int64_t>{0, 2, 3, 4, 1}}},
            "channels_last");
  if (ad.stride * ah.stride * aw.stride > 1) {
    y = c.add(OpKind::reshape, {y},
              {{"shape", ir::Shape{n, ad.conv_out, ah.conv_out, aw.conv_out, groups, ad.stride,
                                   ah.stride, aw.stride, mg}}},
              "phase_axes");
    y = c.add(OpKind::transpose, {y}, {{"perm", std::vector<int64_t>{0, 1, 5, 2, 6, 3, 7, 4, 8}}},
              "interleave");
    y = c.add(OpKind::reshape, {y},
              {{"shape", ir::Shape{n, ad.conv_out * ad.stride, ah.conv_out * ah.stride,
                                   aw.conv_out * aw.stride, m}}},
              "interleaved");
  }
  for (int64_t axis = 1; axis <= 3; ++axis) {
    const TransposedAxis* a = axes[axis - 1];
    if (a->crop != 0 || a->out != a->stride * a->conv_out) {
      y = c.add(OpKind::slice, {y}, {{"axis", axis}, {"start", a->crop}, {"end", a->crop + a->out}},
                "crop");
    }
  }
  return c.add(OpKind::transpose, {y}, {{"perm", std::vector<int64_t>{0, 4, 1, 2, 3}}});
}

void map_conv_transpose(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  if (xs.size() < 3 || xs.size() > 5) {
    c.fail("only 1-D, 2-D and 3-D transposed convolutions are supported (input rank " +
           std::to_string(xs.size()) + ")");
  }
  if (!c.is_constant(1) || !c.constant(1).is_float()) {
    c.fail("weights computed at run time are not supported (the importer rearranges them)");
  }
  if (c.has_input(2) && !c.is_constant(2)) c.fail("a bias computed at run time is not supported");
  const HostTensor& w = c.constant(1);
  const ir::Shape& ws = w.shape;
  if (ws.size() != xs.size()) c.fail("weight rank differs from the input's");
  const size_t r = xs.size() - 2;
  const int64_t groups = c.attr_int("group", 1);
  if (groups < 1 || xs[1] % groups != 0 || ws[0] != xs[1]) {
    c.fail("the weight's first axis (" + std::to_string(ws[0]) + ") must equal the input's " +
           std::to_string(xs[1]) + " channels, a multiple of group " + std::to_string(groups));
  }
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (c.attr_ints("kernel_shape", kernel) != kernel)
    c.fail("kernel_shape does not match the weight");
  for (int64_t k : kernel) check_window_attr(c, "kernel_shape", k);
  const std::vector<int64_t> strides = per_axis_attr(c, "strides", r);
  const std::vector<int64_t> dilations = per_axis_attr(c, "dilations", r);
  const std::vector<int64_t> op = c.attr_ints("output_padding", std::vector<int64_t>(r, 0));
  if (op.size() != r) c.fail("output_padding must have " + std::to_string(r) + " entries");
  std::vector<int64_t> span(r);
  for (size_t d = 0; d < r; ++d) {
    if (xs[2 + d] - 1 > kMaxElements / strides[d])
      c.fail("the output would have more than 2^40 elements along an axis");
    if (op[d] < 0 || (op[d] >= strides[d] && op[d] >= dilations[d]))
      c.fail("output_padding must be >= 0 and less than the stride or the dilation");
    span[d] = dilations[d] * (kernel[d] - 1) + 1;
  }
  std::vector<int64_t> pb, pe;
  transposed_pads(c, ir::Shape(xs.begin() + 2, xs.end()), span, strides, op, pb, pe);

  // Axes as 3-D (missing leading axes have unit extent, kernel and stride).
  std::vector<TransposedAxis> axis_list;
  int64_t dil[3] = {1, 1, 1};
  for (size_t d = 0; d < 3; ++d) {
    const size_t missing = 3 - r;
    if (d < missing) {
      axis_list.emplace_back(1, 1, 1, 0, 0, 0);
      continue;
    }
    const size_t a = d - missing;
    axis_list.emplace_back(xs[2 + a], span[a], strides[a], pb[a], pe[a], op[a]);
    dil[d] = dilations[a];
  }
  const TransposedAxis* const axes[3] = {&axis_list[0], &axis_list[1], &axis_list[2]};
  for (const TransposedAxis& a : axis_list) {
    if (a.out < 1) c.fail("output would be empty (pads larger than the transposed output)");
  }
  HostTensor w5 = w;
  while (w5.shape.size() < 5) w5.shape.insert(w5.shape.begin() + 2, 1);
  HostTensor conv_w = phase_weights(w5, groups, axes, dil);
  // `list` counts the model's weights, not the rearranged ones' zeros.
  c.graph().annotations[kRearrangedWeights] +=
      w.numel() + (c.has_input(2) ? c.constant(2).numel() : 0);

  const TransposedAxis &ad = axis_list[0], &ah = axis_list[1], &aw = axis_list[2];
  const int64_t m = ws[1] * groups, phases = ad.stride * ah.stride * aw.stride;
  std::vector<float> phase_bias;
  if (c.has_input(2)) {
    const std::vector<float> b = c.constant(2).to_floats();
    if (static_cast<int64_t>(b.size()) != m) c.fail("bias must have one entry per output channel");
    const int64_t mg = ws[1];
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t p = 0; p < phases; ++p)
        phase_bias.insert(phase_bias.end(), b.begin() + g * mg, b.begin() + (g + 1) * mg);
  }
  if (r == 3) return c.set_output(0, conv_transpose_3d(c, conv_w, phase_bias, axes, groups, ws[1]));
  conv_w.shape.erase(conv_w.shape.begin() + 2);  // the unit depth of a 1-D or 2-D kernel

  const bool one_d = r == 1;
  std::vector<ir::ValueId> inputs = {one_d ? as_2d(c, c.value(0), "as2d") : c.value(0),
                                     c.constant_value(conv_w, "phase_weights")};
  if (!phase_bias.empty()) {
    inputs.push_back(c.constant_value(HostTensor::floats({m * phases}, phase_bias), "phase_bias"));
  }
  const std::vector<int64_t> sym =
      split_padding(c, inputs[0], {ah.conv_begin, aw.conv_begin}, {ah.conv_end, aw.conv_end}, 0.0);
  ir::ValueId y =
      c.add(OpKind::conv2d, inputs,
            {{"stride", std::vector<int64_t>{1, 1}}, {"pad", sym}, {"groups", groups}}, "phases");
  // Interleave the phases as a channels-last tensor [N, Qh, sh, Qw, sw, G, M / G]: where the
  // conv runs nhwc (the layout pass's default) the layout conversions around it cancel, and the
  // pixel shuffle moves whole runs of M / G channels (of sw x M where G is 1).
  const int64_t n = xs[0];
  y = c.add(OpKind::transpose, {y}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}, "channels_last");
  if (phases > 1) {
    y = c.add(
        OpKind::reshape, {y},
        {{"shape", ir::Shape{n, ah.conv_out, aw.conv_out, groups, ah.stride, aw.stride, ws[1]}}},
        "phase_axes");
    y = c.add(OpKind::transpose, {y}, {{"perm", std::vector<int64_t>{0, 1, 4, 2, 5, 3, 6}}},
              "interleave");
    y = c.add(OpKind::reshape, {y},
              {{"shape", ir::Shape{n, ah.conv_out * ah.stride, aw.conv_out * aw.stride, m}}},
              "interleaved");
  }
  int64_t axis = 1;
  for (const TransposedAxis* a : {&ah, &aw}) {
    if (a->crop != 0 || a->out != a->stride * a->conv_out) {
      y = c.add(OpKind::slice, {y}, {{"axis", axis}, {"start", a->crop}, {"end", a->crop + a->out}},
                "crop");
    }
    ++axis;
  }
  y = c.add(OpKind::transpose, {y}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}, "channels_first");
  if (one_d) y = c.add(OpKind::reshape, {y}, {{"shape", ir::Shape{n, m, aw.out}}});
  c.set_output(0, y);
}

// Col2Im (opset 18; nn.Fold as PyTorch 2 exports it): the blocks' columns summed back into the
// image. It is a transposed convolution whose group c reads channel c's k taps with a one-hot
// weight (tap t to kernel position t), strides, dilations and pads as given, so the ConvTranspose
// mapping computes it; output_padding covers the rows a last block leaves out.
void map_col2im(NodeContext& c) {
  const ir::Shape xs = c.shape(0);
  const std::vector<int64_t> image = c.constant(1).to_ints();
  const std::vector<int64_t> block = c.constant(2).to_ints();
  const size_t r = image.size();
  if (r < 1 || r > 3 || block.size() != r)
    c.fail("image_shape and block_shape must have 1 to 3 entries each, the same number");
  if (xs.size() != 3) c.fail("the input must be [N, C * prod(block_shape), L]");
  const std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> dilations = c.attr_ints("dilations", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (strides.size() != r || dilations.size() != r || pads.size() != 2 * r)
    c.fail("strides, dilations and pads must have one (pads: two) entries per image axis");
  int64_t taps = 1, blocks = 1;
  std::vector<int64_t> blocks_along(r), output_padding(r);
  for (size_t d = 0; d < r; ++d) {
    for (int64_t v : {image[d], block[d], strides[d], dilations[d]}) {
      if (v < 1) c.fail("image_shape, block_shape, strides and dilations must be >= 1");
      check_window_attr(c, "image_shape", v);
    }
    check_window_attr(c, "pads", pads[d]);
    check_window_attr(c, "pads", pads[d + r]);
    if (pads[d] < 0 || pads[d + r] < 0) c.fail("pads must be >= 0");
    const int64_t span = image[d] + pads[d] + pads[d + r] - dilations[d] * (block[d] - 1) - 1;
    if (span < 0) c.fail("a block is larger than the padded image");
    blocks_along[d] = span / strides[d] + 1;
    output_padding[d] = span % strides[d];
    taps *= block[d];
    blocks *= blocks_along[d];
  }
  if (xs[1] % taps != 0)
    c.fail("input channels " + std::to_string(xs[1]) + " are not a multiple of the block's " +
           std::to_string(taps) + " positions");
  if (xs[2] != blocks)
    c.fail("the input has " + std::to_string(xs[2]) + " blocks; the image, block, strides, " +
           "dilations and pads make " + std::to_string(blocks));
  const int64_t channels = xs[1] / taps;
  if (xs[1] > kMaxFoldedElements / taps) c.fail("a one-hot weight of more than 2^27 elements");
  // Weight [C * taps, 1, block...]: channel c * taps + t has a 1 at kernel position t.
  ir::Shape w_shape = {xs[1], 1};
  w_shape.insert(w_shape.end(), block.begin(), block.end());
  std::vector<float> w(static_cast<size_t>(xs[1] * taps), 0.0f);
  for (int64_t ch = 0; ch < xs[1]; ++ch) w[static_cast<size_t>(ch * taps + ch % taps)] = 1.0f;
  ir::Shape blocked = {xs[0], xs[1]};
  blocked.insert(blocked.end(), blocks_along.begin(), blocks_along.end());
  onnx::NodeProto transposed;
  transposed.set_op_type("ConvTranspose");
  *transposed.add_attribute() = onnx::MakeAttribute("strides", strides);
  *transposed.add_attribute() = onnx::MakeAttribute("dilations", dilations);
  *transposed.add_attribute() = onnx::MakeAttribute("pads", pads);
  *transposed.add_attribute() = onnx::MakeAttribute("output_padding", output_padding);
  *transposed.add_attribute() = onnx::MakeAttribute("group", channels);
  ImportedValue x;
  x.id = c.add(OpKind::reshape, {c.value(0)}, {{"shape", blocked}}, "blocks");
  const ir::ValueId y =
      c.import_composed(transposed, {x, ImportedValue::of(HostTensor::floats(w_shape, w))}, 1)[0]
          .id;
  c.set_output(0, y);
}

}  // namespace

void add_conv_transpose_mappings(std::vector<OpMapping>& t) {
  t.push_back({"ConvTranspose", map_conv_transpose, nullptr});
  t.push_back({"Col2Im", map_col2im, nullptr});
}

}  // namespace cuvil::bench::onnx_import
