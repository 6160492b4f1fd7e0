// GridSample (F.grid_sample: spatial transformers, flow warping, deformable attention) at run
// time, written with the IR's elementwise ops, casts and one gather per corner: the input in
// channels-last order flattened to [N*H*W, C] is gathered at each output pixel's corner
// positions n*H*W + y*W + x, each weighted (bilinear) or taken whole (nearest), and corners
// outside the image contribute zeros (padding_mode zeros), the clamped edge pixel (border) or
// the pixel mirrored by the edges (reflection). AffineGrid makes the grid of an affine transform.
#include <string>
#include <vector>

#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"
#include "bench_suite/models/onnx/window_attrs.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;

struct GridSampler {
  NodeContext& c;
  int64_t n, channels, h, w, ho, wo;
  bool align_corners;
  std::string padding;  // padding_mode: zeros, border or reflection
  // Channel groups sampled at positions of their own (DeformConv's offset groups): the pixels
  // are then [N*H*W*groups, C / groups], group g's row of pixel p at p * groups + g.
  int64_t groups = 1;

  ir::ValueId op(OpKind k, std::vector<ir::ValueId> in, const std::string& name) {
    return c.add(k, std::move(in), {}, name);
  }

  // x reflected into [low, low + span] by the axis's borders (PyTorch's reflect_coordinates,
  // with low and span halved): |x - low| folded by span, mirrored on odd folds.
  ir::ValueId reflect(ir::ValueId x, double low, double span, const std::string& axis) {
    if (span <= 0) return c.float_constant(0, axis + "_only");
    const ir::ValueId d =
        op(OpKind::abs, {op(OpKind::sub, {x, c.float_constant(low, axis + "_low")}, axis + "_off")},
           axis + "_dist");
    const ir::ValueId folds = op(
        OpKind::floor,
        {op(OpKind::mul, {d, c.float_constant(1.0 / span, axis + "_inv_span")}, axis + "_spans")},
        axis + "_folds");
    const ir::ValueId extra =
        op(OpKind::sub,
           {d, op(OpKind::mul, {folds, c.float_constant(span, axis + "_span")}, axis + "_whole")},
           axis + "_extra");
    // folds mod 2: folds - 2 floor(folds / 2).
    const ir::ValueId odd = op(
        OpKind::sub,
        {folds,
         op(OpKind::mul,
            {op(OpKind::floor,
                {op(OpKind::mul, {folds, c.float_constant(0.5, axis + "_half")}, axis + "_pairs")},
                axis + "_whole_pairs"),
             c.float_constant(2, axis + "_two")},
            axis + "_even")},
        axis + "_odd");
    return c.add(
        OpKind::where,
        {odd,
         op(OpKind::sub, {c.float_constant(span + low, axis + "_top"), extra}, axis + "_mirrored"),
         op(OpKind::add, {extra, c.float_constant(low, axis + "_base")}, axis + "_kept")},
        {}, axis + "_reflected");
  }

  // A normalised coordinate in [-1, 1] as a pixel coordinate along an axis of `size` pixels
  // (PyTorch's grid_sampler_unnormalize); border padding clamps it to the axis, reflection
  // reflects it by the borders (the corners' centres with align_corners, else their edges),
  // then clamps it.
  ir::ValueId unnormalize(ir::ValueId g, int64_t size, const std::string& axis) {
    // align_corners: (g + 1) / 2 * (size - 1); else ((g + 1) * size - 1) / 2.
    const double scale = align_corners ? 0.5 * static_cast<double>(size - 1) : 0.5 * size;
    const double shift = align_corners ? scale : scale - 0.5;
    ir::ValueId x =
        op(OpKind::add,
           {op(OpKind::mul, {g, c.float_constant(scale, axis + "_scale")}, axis + "_scaled"),
            c.float_constant(shift, axis + "_shift")},
           axis + "_pixel");
    if (padding == "reflection") {
      const double sz = static_cast<double>(size);
      x = align_corners ? reflect(x, 0.0, sz - 1.0, axis) : reflect(x, -0.5, sz, axis);
    }
    if (padding != "zeros")
      x = c.add(OpKind::clip, {x}, {{"min", 0.0}, {"max", static_cast<double>(size - 1)}},
                axis + "_clamped");
    return x;
  }

  // 1 where the integer position lies in [0, size), else 0.
  ir::ValueId inside(ir::ValueId p, int64_t size, const std::string& name) {
    return op(
        OpKind::mul,
        {c.compare(p, "greater_equal", c.integer_constant(0, name + "_zero"), name + "_above"),
         c.compare(p, "less", c.integer_constant(size, name + "_size"), name + "_below")},
        name);
  }
  ir::ValueId clamp(ir::ValueId p, int64_t size, const std::string& name) {
    return op(OpKind::min,
              {op(OpKind::max, {p, c.integer_constant(0, name + "_zero")}, name + "_low"),
               c.integer_constant(size - 1, name + "_last")},
              name);
  }

  // The input's pixels [N, Ho, Wo, C] (group g's channels) at integer positions (x, y)
  // [N, Ho, Wo], scaled by `weight` [N, Ho, Wo] (kNoValue: 1), zero where the position is outside
  // (zeros padding).
  ir::ValueId corner(ir::ValueId pixels, ir::ValueId x, ir::ValueId y, ir::ValueId weight,
                     const std::string& tag, int64_t g = 0) {
    ir::ValueId factor = weight;
    if (padding == "zeros") {
      const ir::ValueId in =
          op(OpKind::mul, {inside(x, w, tag + "x_in"), inside(y, h, tag + "y_in")}, tag + "inside");
      factor = factor == ir::kNoValue ? in : op(OpKind::mul, {factor, in}, tag + "masked");
    }
    std::vector<int64_t> base(static_cast<size_t>(n));
    for (int64_t b = 0; b < n; ++b) base[static_cast<size_t>(b)] = b * h * w;
    ir::ValueId flat =
        op(OpKind::add,
           {op(OpKind::add,
               {op(OpKind::mul, {clamp(y, h, tag + "y"), c.integer_constant(w, tag + "width")},
                   tag + "row"),
                clamp(x, w, tag + "x")},
               tag + "in_image"),
            c.constant_value(HostTensor::ints({n, 1, 1}, base), tag + "image")},
           tag + "flat");
    if (groups > 1) {
      flat = op(OpKind::add,
                {op(OpKind::mul, {flat, c.integer_constant(groups, tag + "groups")}, tag + "rows"),
                 c.integer_constant(g, tag + "group")},
                tag + "group_row");
    }
    ir::ValueId v = c.add(OpKind::gather, {pixels, flat}, {{"axis", int64_t{0}}}, tag + "pixels");
    if (factor == ir::kNoValue) return v;
    factor = c.add(OpKind::reshape, {factor}, {{"shape", ir::Shape{n, ho, wo, 1}}}, tag + "factor");
    return op(OpKind::mul, {v, factor}, tag + "weighted");
  }

  // Group g's pixels [N, Ho, Wo, C] interpolated at pixel coordinates (ix, iy) [N, Ho, Wo] from
  // the four corners around them, each weighted by its nearness.
  ir::ValueId bilinear(ir::ValueId pixels, ir::ValueId ix, ir::ValueId iy, const std::string& tag,
                       int64_t g = 0) {
    const ir::ValueId fx = op(OpKind::floor, {ix}, tag + "x_floor");
    const ir::ValueId fy = op(OpKind::floor, {iy}, tag + "y_floor");
    const ir::ValueId x0 = c.cast_to_integer(fx, tag + "x0");
    const ir::ValueId y0 = c.cast_to_integer(fy, tag + "y0");
    const ir::ValueId x1 = op(OpKind::add, {x0, c.integer_constant(1, tag + "one_x")}, tag + "x1");
    const ir::ValueId y1 = op(OpKind::add, {y0, c.integer_constant(1, tag + "one_y")}, tag + "y1");
    const ir::ValueId wx1 = op(OpKind::sub, {ix, fx}, tag + "wx1");
    const ir::ValueId wy1 = op(OpKind::sub, {iy, fy}, tag + "wy1");
    const ir::ValueId wx0 =
        op(OpKind::sub, {c.float_constant(1, tag + "one_wx"), wx1}, tag + "wx0");
    const ir::ValueId wy0 =
        op(OpKind::sub, {c.float_constant(1, tag + "one_wy"), wy1}, tag + "wy0");
    auto weighted = [&](ir::ValueId x, ir::ValueId y, ir::ValueId wx, ir::ValueId wy,
                        const std::string& at) {
      return corner(pixels, x, y, op(OpKind::mul, {wx, wy}, tag + "w_" + at), tag + at + "_", g);
    };
    const ir::ValueId nw = weighted(x0, y0, wx0, wy0, "nw"), ne = weighted(x1, y0, wx1, wy0, "ne");
    const ir::ValueId sw = weighted(x0, y1, wx0, wy1, "sw"), se = weighted(x1, y1, wx1, wy1, "se");
    return op(OpKind::add,
              {op(OpKind::add, {nw, ne}, tag + "north"), op(OpKind::add, {sw, se}, tag + "south")},
              tag + "sum");
  }
};

void map_grid_sample(NodeContext& c) {
  const ir::Shape xs = c.shape(0), gs = c.shape(1);
  if (xs.size() != 4) c.fail("only 4-D inputs (N, C, H, W) are supported");
  if (gs.size() != 4 || gs[0] != xs[0] || gs[3] != 2)
    c.fail("grid has shape " + ir::to_string(gs) + ", expected [" + std::to_string(xs[0]) +
           ", H_out, W_out, 2]");
  if (c.is_integer(0) || c.is_integer(1)) c.fail("needs float input and grid");
  std::string mode = c.attr_string("mode", "bilinear");
  if (mode == "linear") mode = "bilinear";  // opset 20's names
  if (mode != "bilinear" && mode != "nearest")
    c.fail("mode '" + mode + "' is not supported (bilinear and nearest)");
  const std::string padding = c.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    c.fail("padding_mode '" + padding + "' is not supported (zeros, border and reflection)");
  GridSampler s{
      c, xs[0], xs[1], xs[2], xs[3], gs[1], gs[2], c.attr_int("align_corners", 0) != 0, padding};
  if (s.n * s.h * s.w > kMaxExactInteger)
    c.fail("N*H*W is " + std::to_string(s.n * s.h * s.w) +
           "; positions above 2^24 are not exact in fp32 storage");
  // [N, C, H, W] -> [N*H*W, C]: one gather row per pixel.
  const ir::ValueId pixels = c.add(OpKind::reshape,
                                   {c.add(OpKind::transpose, {c.value(0)},
                                          {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}, "nhwc")},
                                   {{"shape", ir::Shape{s.n * s.h * s.w, s.channels}}}, "pixels");
  auto coordinate = [&](int64_t k, const std::string& axis) {
    const ir::ValueId g =
        c.add(OpKind::slice, {c.value(1)}, {{"axis", int64_t{3}}, {"start", k}, {"end", k + 1}},
              axis + "_grid");
    return c.add(OpKind::reshape, {g}, {{"shape", ir::Shape{s.n, s.ho, s.wo}}}, axis + "_norm");
  };
  const ir::ValueId ix = s.unnormalize(coordinate(0, "x"), s.w, "x");
  const ir::ValueId iy = s.unnormalize(coordinate(1, "y"), s.h, "y");
  ir::ValueId y;
  if (mode == "nearest") {  // half to even, as PyTorch's nearbyint
    y = s.corner(pixels, c.cast_to_integer(s.op(OpKind::round, {ix}, "x_round"), "x_near"),
                 c.cast_to_integer(s.op(OpKind::round, {iy}, "y_round"), "y_near"), ir::kNoValue,
                 "near_");
  } else {
    y = s.bilinear(pixels, ix, iy, "");
  }
  c.set_output(0, c.add(OpKind::transpose, {y}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}));
}

}  // namespace

// AffineGrid (opset 20; F.affine_grid, the other half of a spatial transformer): each output
// position's normalised coordinates (x, y[, z], 1) times theta's rows. One matmul of a constant
// base grid [positions, r + 1] with theta transposed, for every theta of the batch. A size-1 axis
// has the coordinate 0 (as PyTorch's affine_grid).
void map_affine_grid(NodeContext& c) {
  const ir::Shape ts = c.shape(0);
  const std::vector<int64_t> size = c.constant(1).to_ints();
  if (size.size() != 4 && size.size() != 5)
    c.fail("size must be [N, C, H, W] or [N, C, D, H, W], got " + std::to_string(size.size()) +
           " entries");
  const int64_t r = static_cast<int64_t>(size.size()) - 2;
  if (ts != ir::Shape{size[0], r, r + 1})
    c.fail("theta of " + ir::to_string(ts) + " for a size of batch " + std::to_string(size[0]) +
           ": [N, " + std::to_string(r) + ", " + std::to_string(r + 1) + "] is needed");
  const bool align = c.attr_int("align_corners", 0) != 0;
  // Spatial axes, outermost first (D, H, W), each checked before their product is formed.
  const std::vector<int64_t> axes(size.begin() + 2, size.end());
  int64_t positions = 1;
  for (int64_t n : axes) {
    if (n < 1) c.fail("size has an empty spatial axis");
    check_window_attr(c, "size", n);
    positions *= n;
    if (positions > kMaxFoldedElements / (r + 1)) c.fail("a grid of more than 2^27 coordinates");
  }
  auto coordinate = [align](int64_t i, int64_t n) {
    if (n == 1) return 0.0;
    const double x = static_cast<double>(i), len = static_cast<double>(n);
    return align ? -1.0 + 2.0 * x / (len - 1.0) : (2.0 * x + 1.0) / len - 1.0;
  };
  // Row p holds (x, y[, z], 1): x from the last axis, y from the one before, z from the first.
  std::vector<float> base(static_cast<size_t>(positions * (r + 1)));
  for (int64_t p = 0; p < positions; ++p) {
    int64_t rest = p;
    for (int64_t a = r - 1; a >= 0; --a) {
      const int64_t n = axes[static_cast<size_t>(a)];
      const int64_t i = rest % n;
      rest /= n;
      base[static_cast<size_t>(p * (r + 1) + (r - 1 - a))] = static_cast<float>(coordinate(i, n));
    }
    base[static_cast<size_t>(p * (r + 1) + r)] = 1.0f;
  }
  const ir::ValueId theta_t =
      c.add(OpKind::transpose, {c.value(0)}, {{"perm", std::vector<int64_t>{0, 2, 1}}}, "theta_t");
  const ir::ValueId points =
      c.add(OpKind::matmul,
            {c.constant_value(HostTensor::floats({positions, r + 1}, std::move(base)), "base_grid"),
             theta_t},
            {}, "points");
  ir::Shape grid = {size[0]};
  grid.insert(grid.end(), axes.begin(), axes.end());
  grid.push_back(r);
  c.set_output(0, c.add(OpKind::reshape, {points}, {{"shape", grid}}));
}

// DeformConv (opset 19; torchvision's deform_conv2d, DCNv1 and, with a mask, DCNv2): each kernel
// tap of each output pixel reads the input at its regular position moved by a run-time offset
// (dy, dx) of its offset group, bilinearly (corners outside the image read zero), times the mask
// where there is one; the samples of every tap are then one linear layer with the weights
// ([kh * kw * C] per output channel, zeros between groups).
void map_deform_conv(NodeContext& c) {
  const ir::Shape xs = c.shape(0), ws = c.shape(1), os = c.shape(2);
  if (xs.size() != 4)
    c.fail("only 2-D deformable convolutions ([N, C, H, W] inputs) are supported");
  if (ws.size() != 4) c.fail("the weight must be [M, C / group, kH, kW]");
  if (!c.is_constant(1)) c.fail("the weight must be a constant (the importer rearranges it)");
  if (c.is_integer(0) || c.is_integer(2)) c.fail("needs float input and offsets");
  const int64_t n = xs[0], channels = xs[1], h = xs[2], w = xs[3], m = ws[0];
  const int64_t groups = c.attr_int("group", 1), offset_groups = c.attr_int("offset_group", 1);
  if (groups < 1 || channels % groups != 0 || ws[1] * groups != channels || m % groups != 0)
    c.fail("group " + std::to_string(groups) + " does not divide the input's " +
           std::to_string(channels) + " and the weight's " + ir::to_string(ws) + " channels");
  if (offset_groups < 1 || channels % offset_groups != 0)
    c.fail("offset_group " + std::to_string(offset_groups) + " does not divide the " +
           std::to_string(channels) + " input channels");
  const int64_t kh = ws[2], kw = ws[3], taps = kh * kw;
  if (c.has_attr("kernel_shape") && c.attr_ints("kernel_shape", {}) != std::vector<int64_t>{kh, kw})
    c.fail("kernel_shape differs from the weight's");
  const std::vector<int64_t> strides = c.attr_ints("strides", {1, 1});
  const std::vector<int64_t> dilations = c.attr_ints("dilations", {1, 1});
  const std::vector<int64_t> pads = c.attr_ints("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    c.fail("strides and dilations need 2 entries, pads 4");
  for (int64_t v : {strides[0], strides[1], dilations[0], dilations[1]}) {
    if (v < 1) c.fail("strides and dilations must be >= 1");
    check_window_attr(c, "strides", v);
  }
  for (int64_t v : pads) {
    if (v < 0) c.fail("pads must be >= 0");
    check_window_attr(c, "pads", v);
  }
  const int64_t span_h = h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1;
  const int64_t span_w = w + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1;
  if (span_h < 0 || span_w < 0) c.fail("the kernel is larger than the padded input");
  const int64_t oh = span_h / strides[0] + 1, ow = span_w / strides[1] + 1;
  if (os != ir::Shape{n, offset_groups * 2 * taps, oh, ow})
    c.fail("offset has shape " + ir::to_string(os) + ", expected " +
           ir::to_string(ir::Shape{n, offset_groups * 2 * taps, oh, ow}));
  const bool has_mask = c.has_input(4);
  if (has_mask && c.shape(4) != ir::Shape{n, offset_groups * taps, oh, ow})
    c.fail("mask has shape " + ir::to_string(c.shape(4)) + ", expected " +
           ir::to_string(ir::Shape{n, offset_groups * taps, oh, ow}));
  const int64_t per_group = channels / offset_groups;
  if (n * h * w * offset_groups > kMaxExactInteger)
    c.fail("N*H*W*offset_group is " + std::to_string(n * h * w * offset_groups) +
           "; positions above 2^24 are not exact in fp32 storage");
  if (m > kMaxFoldedElements / (taps * channels))
    c.fail("a rearranged weight of more than 2^27 elements");
  GridSampler s{c, n, per_group, h, w, oh, ow, false, "zeros"};
  s.groups = offset_groups;
  // [N, C, H, W] -> [N*H*W*G, C / G]: one gather row per pixel and offset group.
  const ir::ValueId pixels =
      c.add(OpKind::reshape,
            {c.add(OpKind::transpose, {c.value(0)}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}},
                   "nhwc")},
            {{"shape", ir::Shape{n * h * w * offset_groups, per_group}}}, "pixels");
  auto channel = [&](ir::ValueId v, int64_t k, const std::string& name) {
    const ir::ValueId one =
        c.add(OpKind::slice, {v}, {{"axis", int64_t{1}}, {"start", k}, {"end", k + 1}}, name);
    return c.add(OpKind::reshape, {one}, {{"shape", ir::Shape{n, oh, ow}}}, name + "_map");
  };
  // The regular position of tap (i, j) at every output pixel, [1, oh, ow].
  auto regular = [&](int64_t axis, int64_t tap, const std::string& name) {
    std::vector<float> at(static_cast<size_t>(oh * ow));
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t o = axis == 0 ? y : x;
        at[static_cast<size_t>(y * ow + x)] =
            static_cast<float>(o * strides[axis] - pads[axis] + tap * dilations[axis]);
      }
    }
    return c.constant_value(HostTensor::floats({1, oh, ow}, std::move(at)), name);
  };
  std::vector<ir::ValueId> columns;
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) {
      const int64_t k = i * kw + j;
      const std::string tap = "tap" + std::to_string(k);
      const ir::ValueId base_y = regular(0, i, tap + "_y"), base_x = regular(1, j, tap + "_x");
      std::vector<ir::ValueId> parts;
      for (int64_t g = 0; g < offset_groups; ++g) {
        std::string tag = tap;
        tag += "_g" + std::to_string(g) + "_";
        const int64_t first = (g * taps + k) * 2;
        const ir::ValueId py =
            c.add(OpKind::add, {channel(c.value(2), first, tag + "dy"), base_y}, {}, tag + "py");
        const ir::ValueId px = c.add(
            OpKind::add, {channel(c.value(2), first + 1, tag + "dx"), base_x}, {}, tag + "px");
        ir::ValueId v = s.bilinear(pixels, px, py, tag, g);
        if (has_mask) {
          const ir::ValueId mask =
              c.add(OpKind::reshape, {channel(c.value(4), g * taps + k, tag + "mask")},
                    {{"shape", ir::Shape{n, oh, ow, 1}}}, tag + "mask_last");
          v = c.add(OpKind::mul, {v, mask}, {}, tag + "masked");
        }
        parts.push_back(v);
      }
      columns.push_back(parts.size() == 1 ? parts[0]
                                          : c.add(OpKind::concat, parts, {{"axis", int64_t{3}}},
                                                  tap + "_channels"));
    }
  }
  const ir::ValueId cols = columns.size() == 1
                               ? columns[0]
                               : c.add(OpKind::concat, columns, {{"axis", int64_t{3}}}, "columns");
  // Weight [M, C / group, kH, kW] -> [M, taps * C], column k * C + c; zero outside the group.
  const std::vector<float> wf = c.constant(1).to_floats();
  const int64_t cg = channels / groups, mg = m / groups;
  std::vector<float> dense(static_cast<size_t>(m * taps * channels), 0.0f);
  for (int64_t o = 0; o < m; ++o) {
    const int64_t first = o / mg * cg;
    for (int64_t ci = 0; ci < cg; ++ci) {
      for (int64_t k = 0; k < taps; ++k) {
        dense[static_cast<size_t>((o * taps + k) * channels + first + ci)] =
            wf[static_cast<size_t>((o * cg + ci) * taps + k)];
      }
    }
  }
  std::vector<ir::ValueId> linear_in = {
      cols,
      c.constant_value(HostTensor::floats({m, taps * channels}, std::move(dense)), "weight", true)};
  if (c.has_input(3)) linear_in.push_back(c.value(3));
  const ir::ValueId y = c.add(OpKind::linear, linear_in, {}, "product");
  c.set_output(0, c.add(OpKind::transpose, {y}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}));
}

void add_grid_sample_mappings(std::vector<OpMapping>& t) {
  t.push_back({"DeformConv", map_deform_conv, nullptr});
  t.push_back({"GridSample", map_grid_sample, nullptr});
  t.push_back({"AffineGrid", map_affine_grid, nullptr});
}

}  // namespace cuvil::bench::onnx_import
