// Normalizations and p-norm pools without an IR op of their own, composed of IR ops as the ONNX
// specification defines them: LRN (Caffe-era classifiers: AlexNet, GoogLeNet, ZFNet),
// LpNormalization, MeanVarianceNormalization, LpPool and GlobalLpPool. Their elementwise parts
// fuse; LpPool's window sum is the AveragePool mapping's, imported through the same table.
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

using ir::OpKind;

void require_float_input(NodeContext& c) {
  if (c.is_integer(0)) c.fail("input 0 must be float, not integers");
}

// |x|^p for p = 1, 2 or any other positive p.
ir::ValueId abs_pow(NodeContext& c, ir::ValueId x, double p) {
  if (p == 2.0) return c.add(OpKind::mul, {x, x}, {}, "square");
  const ir::ValueId a = c.add(OpKind::abs, {x}, {}, "abs");
  if (p == 1.0) return a;
  return c.add(OpKind::pow, {a, c.float_constant(p, "p")}, {}, "pow");
}

// s^(1/p), the root that turns a sum of |x|^p into the p-norm.
ir::ValueId root(NodeContext& c, ir::ValueId s, double p, const std::string& suffix) {
  if (p == 1.0) return s;
  if (p == 2.0) return c.add(OpKind::sqrt, {s}, {}, suffix);
  return c.add(OpKind::pow, {s, c.float_constant(1.0 / p, "inv_p")}, {}, suffix);
}

double pool_p(NodeContext& c) {
  const double p = c.has_attr("p") ? static_cast<double>(c.attr_int("p", 2)) : 2.0;
  if (!(p > 0)) c.fail("p must be positive, got " + std::to_string(p));
  return p;
}

// LRN(x; size, alpha, beta, bias): x / (bias + alpha / size * S)^beta, where S sums x^2 over the
// channels [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] inside the input. The squares
// are zero-padded along the channels and `size` shifted slices of them summed.
void map_lrn(NodeContext& c) {
  require_float_input(c);
  const ir::Shape xs = c.shape(0);
  if (xs.size() < 3)
    c.fail("input must have rank >= 3 ([N, C, ...]), got rank " + std::to_string(xs.size()));
  if (!c.has_attr("size")) c.fail("attribute 'size' is required");
  const int64_t size = c.attr_int("size", 1);
  if (size < 1) c.fail("size must be >= 1, got " + std::to_string(size));
  const double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75),
               bias = c.attr_float("bias", 1.0);
  // A window reaching past every channel sums them all: the taps beyond C - 1 either side read
  // only padding, so the window is clamped there (alpha / size keeps the size given).
  const int64_t channels = xs[1];
  const int64_t before = std::min((size - 1) / 2, channels - 1),
                after = std::min(size - 1 - (size - 1) / 2, channels - 1);
  const int64_t taps = before + after + 1;
  const ir::ValueId x = c.value(0);
  const ir::ValueId sq = c.add(OpKind::mul, {x, x}, {}, "square");
  std::vector<int64_t> pads(2 * xs.size(), 0);
  pads[1] = before;
  pads[xs.size() + 1] = after;
  const ir::ValueId padded =
      taps == 1 ? sq
                : c.add(OpKind::pad, {sq},
                        {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}},
                        "pad_channels");
  ir::ValueId sum = ir::kNoValue;
  for (int64_t k = 0; k < taps; ++k) {
    const ir::ValueId shifted =
        taps == 1 ? padded
                  : c.add(OpKind::slice, {padded},
                          {{"axis", int64_t{1}}, {"start", k}, {"end", k + channels}},
                          "window" + std::to_string(k));
    sum = sum == ir::kNoValue ? shifted
                              : c.add(OpKind::add, {sum, shifted}, {}, "sum" + std::to_string(k));
  }
  const ir::ValueId scaled =
      c.add(OpKind::mul, {sum, c.float_constant(alpha / static_cast<double>(size), "alpha")}, {},
            "scaled");
  const ir::ValueId base = c.add(OpKind::add, {scaled, c.float_constant(bias, "bias")}, {}, "base");
  const ir::ValueId den =
      beta == 1.0 ? base : c.add(OpKind::pow, {base, c.float_constant(beta, "beta")}, {}, "den");
  c.set_output(0, c.add(OpKind::div, {x, den}));
}

// LpNormalization(x; axis, p): x / ||x||_p along the axis (p = 1 or 2), no epsilon, as the
// specification's reference divides.
void map_lp_normalization(NodeContext& c) {
  require_float_input(c);
  const ir::Shape xs = c.shape(0);
  if (xs.empty()) c.fail("input 0 is a scalar; it has no axis to normalize");
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), xs.size());
  const int64_t p = c.attr_int("p", 2);
  if (p != 1 && p != 2) c.fail("p must be 1 or 2, got " + std::to_string(p));
  const ir::ValueId x = c.value(0);
  const ir::ValueId sum =
      c.add(OpKind::reduce_sum, {abs_pow(c, x, static_cast<double>(p))},
            {{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{1}}}, "sum");
  c.set_output(0, c.add(OpKind::div, {x, root(c, sum, static_cast<double>(p), "norm")}));
}

// MeanVarianceNormalization(x; axes = [0, 2, 3]): (x - E[x]) / (sqrt(Var[x]) + 1e-9), the
// moments over `axes` (the variance as E[(x - E[x])^2], the specification's E[x^2] - E[x]^2
// without its cancellation).
void map_mean_variance_normalization(NodeContext& c) {
  require_float_input(c);
  const ir::Shape xs = c.shape(0);
  const std::vector<int64_t> axes = normalize_axes(c, c.attr_ints("axes", {0, 2, 3}), xs.size());
  const ir::Attrs kept = {{"axes", axes}, {"keepdims", int64_t{1}}};
  const ir::ValueId x = c.value(0);
  const ir::ValueId centered =
      c.add(OpKind::sub, {x, c.add(OpKind::reduce_mean, {x}, kept, "mean")}, {}, "centered");
  const ir::ValueId variance = c.add(
      OpKind::reduce_mean, {c.add(OpKind::mul, {centered, centered}, {}, "square")}, kept, "var");
  const ir::ValueId den = c.add(
      OpKind::add, {c.add(OpKind::sqrt, {variance}, {}, "std"), c.float_constant(1e-9, "epsilon")},
      {}, "den");
  c.set_output(0, c.add(OpKind::div, {centered, den}));
}

// LpPool(x; p, kernel_shape, pads, strides, ...): (sum of |x|^p over the window)^(1/p), zero
// padding contributing nothing. The window sum is AveragePool's (padding counted) times the
// window's size, so every pooling attribute means what it means there.
void map_lp_pool(NodeContext& c) {
  require_float_input(c);
  const double p = pool_p(c);
  const std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {});
  if (kernel.empty()) c.fail("attribute 'kernel_shape' is required");
  onnx::NodeProto average;
  average.set_op_type("AveragePool");
  for (const onnx::AttributeProto& a : c.node().attribute()) {
    if (a.name() != "p") *average.add_attribute() = a;
  }
  *average.add_attribute() = onnx::MakeAttribute("count_include_pad", int64_t{1});
  ImportedValue powered;
  powered.id = abs_pow(c, c.value(0), p);
  const ImportedValue mean = c.import_composed(average, {powered}, 1)[0];
  double window = 1;
  for (int64_t k : kernel) window *= static_cast<double>(k);
  const ir::ValueId sum =
      c.add(OpKind::mul, {mean.id, c.float_constant(window, "window")}, {}, "sum");
  c.set_output(0, root(c, sum, p, "norm"));
}

// GlobalLpPool(x; p): the p-norm over every spatial axis, kept as 1s.
void map_global_lp_pool(NodeContext& c) {
  require_float_input(c);
  const ir::Shape xs = c.shape(0);
  if (xs.size() < 3) c.fail("input must have rank >= 3, got rank " + std::to_string(xs.size()));
  const double p = pool_p(c);
  std::vector<int64_t> axes;
  for (size_t d = 2; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  const ir::ValueId sum = c.add(OpKind::reduce_sum, {abs_pow(c, c.value(0), p)},
                                {{"axes", axes}, {"keepdims", int64_t{1}}}, "sum");
  c.set_output(0, root(c, sum, p, ""));
}

}  // namespace

void add_norm_mappings(std::vector<OpMapping>& t) {
  t.push_back({"LRN", map_lrn, nullptr});
  t.push_back({"LpNormalization", map_lp_normalization, nullptr});
  t.push_back({"MeanVarianceNormalization", map_mean_variance_normalization, nullptr});
  t.push_back({"LpPool", map_lp_pool, nullptr});
  t.push_back({"GlobalLpPool", map_global_lp_pool, nullptr});
}

}  // namespace cuvil::bench::onnx_import
