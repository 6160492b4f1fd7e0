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

  // The input's pixels [N, Ho, Wo, C] at integer positions (x, y) [N, Ho, Wo], scaled by
  // `weight` [N, Ho, Wo] (kNoValue: 1), zero where the position is outside (zeros padding).
  ir::ValueId corner(ir::ValueId pixels, ir::ValueId x, ir::ValueId y, ir::ValueId weight,
                     const std::string& tag) {
    ir::ValueId factor = weight;
    if (padding == "zeros") {
      const ir::ValueId in =
          op(OpKind::mul, {inside(x, w, tag + "x_in"), inside(y, h, tag + "y_in")}, tag + "inside");
      factor = factor == ir::kNoValue ? in : op(OpKind::mul, {factor, in}, tag + "masked");
    }
    std::vector<int64_t> base(static_cast<size_t>(n));
    for (int64_t b = 0; b < n; ++b) base[static_cast<size_t>(b)] = b * h * w;
    const ir::ValueId flat =
        op(OpKind::add,
           {op(OpKind::add,
               {op(OpKind::mul, {clamp(y, h, tag + "y"), c.integer_constant(w, tag + "width")},
                   tag + "row"),
                clamp(x, w, tag + "x")},
               tag + "in_image"),
            c.constant_value(HostTensor::ints({n, 1, 1}, base), tag + "image")},
           tag + "flat");
    ir::ValueId v = c.add(OpKind::gather, {pixels, flat}, {{"axis", int64_t{0}}}, tag + "pixels");
    if (factor == ir::kNoValue) return v;
    factor = c.add(OpKind::reshape, {factor}, {{"shape", ir::Shape{n, ho, wo, 1}}}, tag + "factor");
    return op(OpKind::mul, {v, factor}, tag + "weighted");
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
    const ir::ValueId fx = s.op(OpKind::floor, {ix}, "x_floor");
    const ir::ValueId fy = s.op(OpKind::floor, {iy}, "y_floor");
    const ir::ValueId x0 = c.cast_to_integer(fx, "x0"), y0 = c.cast_to_integer(fy, "y0");
    const ir::ValueId x1 = s.op(OpKind::add, {x0, c.integer_constant(1, "one_x")}, "x1");
    const ir::ValueId y1 = s.op(OpKind::add, {y0, c.integer_constant(1, "one_y")}, "y1");
    const ir::ValueId wx1 = s.op(OpKind::sub, {ix, fx}, "wx1");
    const ir::ValueId wy1 = s.op(OpKind::sub, {iy, fy}, "wy1");
    const ir::ValueId wx0 = s.op(OpKind::sub, {c.float_constant(1, "one_wx"), wx1}, "wx0");
    const ir::ValueId wy0 = s.op(OpKind::sub, {c.float_constant(1, "one_wy"), wy1}, "wy0");
    const ir::ValueId nw = s.corner(pixels, x0, y0, s.op(OpKind::mul, {wx0, wy0}, "w_nw"), "nw_");
    const ir::ValueId ne = s.corner(pixels, x1, y0, s.op(OpKind::mul, {wx1, wy0}, "w_ne"), "ne_");
    const ir::ValueId sw = s.corner(pixels, x0, y1, s.op(OpKind::mul, {wx0, wy1}, "w_sw"), "sw_");
    const ir::ValueId se = s.corner(pixels, x1, y1, s.op(OpKind::mul, {wx1, wy1}, "w_se"), "se_");
    y = s.op(OpKind::add,
             {s.op(OpKind::add, {nw, ne}, "north"), s.op(OpKind::add, {sw, se}, "south")}, "sum");
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

void add_grid_sample_mappings(std::vector<OpMapping>& t) {
  t.push_back({"GridSample", map_grid_sample, nullptr});
  t.push_back({"AffineGrid", map_affine_grid, nullptr});
}

}  // namespace cuvil::bench::onnx_import
