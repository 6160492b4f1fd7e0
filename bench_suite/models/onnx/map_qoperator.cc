// The operator form of quantized ONNX models (ONNX Runtime's quantizer writes it: QOperator
// format for static quantization, DynamicQuantizeLinear + MatMulInteger for dynamic):
// QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger and DynamicQuantizeLinear. Each is the
// float operator between dequantization and quantization, composed through the same table
// (DequantizeLinear, Conv, MatMul, QuantizeLinear), so quantized weights fold to fp32 at import
// and the arithmetic runs in fp32 kernels on the integers' exact values (products and sums above
// 2^24 round in fp32, a relative 6e-8).
#include <onnx/defs/attr_proto_util.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/node_context.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;

onnx::NodeProto node_of(const char* op_type) {
  onnx::NodeProto node;
  node.set_op_type(op_type);
  return node;
}

// A composed node carrying the attributes of `c`'s node named in `names`.
onnx::NodeProto with_attributes(NodeContext& c, const char* op_type,
                                const std::vector<std::string>& names) {
  onnx::NodeProto node = node_of(op_type);
  for (const onnx::AttributeProto& a : c.node().attribute()) {
    for (const std::string& n : names)
      if (a.name() == n) *node.add_attribute() = a;
  }
  return node;
}

const std::vector<std::string> kConvAttributes = {"auto_pad",     "dilations", "group",
                                                  "kernel_shape", "pads",      "strides"};

// DequantizeLinear(input value, scale, zero point) through the table: a constant folds.
ImportedValue dequantized(NodeContext& c, size_t value, size_t scale, size_t zero_point,
                          int64_t axis) {
  onnx::NodeProto dq = node_of("DequantizeLinear");
  *dq.add_attribute() = onnx::MakeAttribute("axis", axis);
  std::vector<ImportedValue> inputs = {c.input(value), c.input(scale)};
  if (c.has_input(zero_point)) inputs.push_back(c.input(zero_point));
  return c.import_composed(dq, inputs, 1)[0];
}

// QuantizeLinear(y, scale, zero point) through the table: the output's integers, typed i32.
void quantize_output(NodeContext& c, const ImportedValue& y, size_t scale, size_t zero_point,
                     int64_t axis) {
  onnx::NodeProto q = node_of("QuantizeLinear");
  *q.add_attribute() = onnx::MakeAttribute("axis", axis);
  std::vector<ImportedValue> inputs = {y, c.input(scale)};
  if (c.has_input(zero_point)) inputs.push_back(c.input(zero_point));
  c.set_output_value(0, c.import_composed(q, inputs, 1)[0]);
}

// The bias of a QLinearConv: int32 values in units of x_scale * w_scale (per output channel),
// folded to fp32 at import.
ImportedValue conv_bias(NodeContext& c) {
  const HostTensor &b = c.constant(8), &x_scale = c.constant(1), &w_scale = c.constant(4);
  if (b.is_float()) c.fail("the bias (input 8) must be int32");
  if (!x_scale.is_float() || x_scale.numel() != 1) c.fail("x_scale (input 1) must be one float");
  if (!w_scale.is_float() || (w_scale.numel() != 1 && w_scale.numel() != b.numel())) {
    c.fail("w_scale (input 4) must hold one value or one per output channel (" +
           std::to_string(b.numel()) + ")");
  }
  std::vector<float> out(static_cast<size_t>(b.numel()));
  for (int64_t k = 0; k < b.numel(); ++k) {
    const float ws = w_scale.f[static_cast<size_t>(w_scale.numel() == 1 ? 0 : k)];
    out[static_cast<size_t>(k)] = static_cast<float>(static_cast<double>(b.integer(k)) *
                                                     x_scale.f[0] * static_cast<double>(ws));
  }
  return ImportedValue::of(HostTensor::floats(b.shape, std::move(out)));
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?): Conv of the dequantized
// input and weights (per output channel scales on the weights' axis 0), quantized.
void map_qlinear_conv(NodeContext& c) {
  std::vector<ImportedValue> conv_inputs = {dequantized(c, 0, 1, 2, 1), dequantized(c, 3, 4, 5, 0)};
  if (c.has_input(8)) conv_inputs.push_back(conv_bias(c));
  const ImportedValue y =
      c.import_composed(with_attributes(c, "Conv", kConvAttributes), conv_inputs, 1)[0];
  quantize_output(c, y, 6, 7, 1);
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): MatMul of the dequantized
// operands (b's scales per column: axis -1 of a 2-D b), quantized.
void map_qlinear_matmul(NodeContext& c) {
  const ImportedValue y = c.import_composed(
      node_of("MatMul"), {dequantized(c, 0, 1, 2, 1), dequantized(c, 3, 4, 5, -1)}, 1)[0];
  quantize_output(c, y, 6, 7, -1);
}

// x - zero_point as floats (x's integers exact in fp32): a constant folds, a run-time value is
// cast and shifted. `row_axis`: a 1-D zero point of more than one value applies along this axis
// of x (MatMulInteger's per-row a_zero_point), else it broadcasts against the last axis.
ImportedValue centred(NodeContext& c, size_t value, size_t zero_point, bool per_row) {
  const ImportedValue x = c.input(value);
  if (!c.is_integer(value)) c.fail("input " + std::to_string(value) + " must hold integers");
  if (c.has_input(zero_point) && !c.is_integer(zero_point))
    c.fail("the zero point (input " + std::to_string(zero_point) + ") must hold integers");
  ir::Shape zp_shape;
  if (c.has_input(zero_point)) {
    zp_shape = c.shape(zero_point);
    if (zp_shape.size() > 1)
      c.fail("the zero point (input " + std::to_string(zero_point) + ") must be a scalar or 1-D");
  }
  const bool shifted = c.has_input(zero_point);
  if (x.constant && (!shifted || c.is_constant(zero_point))) {
    const HostTensor& t = *x.constant;
    const HostTensor zp =
        shifted ? c.constant(zero_point) : HostTensor::ints({}, std::vector<int64_t>{0});
    const ir::Shape s = t.shape;
    const int64_t n = zp.numel(), inner = per_row && n > 1 && s.size() >= 2 ? s.back() : 1;
    std::vector<float> out(static_cast<size_t>(t.numel()));
    for (int64_t k = 0; k < t.numel(); ++k) {
      const int64_t z = n == 1 ? zp.integer(0) : zp.integer((k / inner) % n);
      out[static_cast<size_t>(k)] = static_cast<float>(t.integer(k) - z);
    }
    return ImportedValue::of(HostTensor::floats(s, std::move(out)));
  }
  ImportedValue v;
  v.id = c.add(OpKind::cast, {c.value(value)}, {{"dtype", std::string("f32")}},
               "in" + std::to_string(value));
  if (!shifted) return v;
  ir::ValueId zp = c.add(OpKind::cast, {c.value(zero_point)}, {{"dtype", std::string("f32")}},
                         "zero_point" + std::to_string(value));
  if (per_row && zp_shape.size() == 1 && zp_shape[0] > 1)  // [M] against rows: [M, 1]
    zp = c.add(OpKind::reshape, {zp}, {{"shape", ir::Shape{zp_shape[0], 1}}},
               "per_row" + std::to_string(value));
  v.id = c.add(OpKind::sub, {v.id, zp}, {}, "centred" + std::to_string(value));
  return v;
}

// The int32 result of an integer operator: its fp32 value cast to the IR's integer type.
void integer_output(NodeContext& c, const ImportedValue& y) {
  c.set_output(0,
               c.cast_to_integer(y.constant ? c.constant_value(*y.constant, "folded") : y.id, ""));
}

// MatMulInteger(A, B, a_zero_point?, b_zero_point?): (A - a_zp) @ (B - b_zp) in int32; a_zp per
// row of A or per tensor, b_zp per column of B or per tensor.
void map_matmul_integer(NodeContext& c) {
  integer_output(c, c.import_composed(node_of("MatMul"),
                                      {centred(c, 0, 2, true), centred(c, 1, 3, false)}, 1)[0]);
}

// ConvInteger(x, w, x_zero_point?, w_zero_point?): Conv(x - x_zp, w - w_zp) in int32.
void map_conv_integer(NodeContext& c) {
  if (c.has_input(3) && c.shape(3).size() == 1 && c.shape(3)[0] > 1)
    c.fail("a per-channel w_zero_point is not supported");
  if (c.has_input(2) && !c.shape(2).empty() && c.shape(2) != ir::Shape{1})
    c.fail("x_zero_point must be a scalar");
  integer_output(c, c.import_composed(with_attributes(c, "Conv", kConvAttributes),
                                      {centred(c, 0, 2, false), centred(c, 1, 3, false)}, 1)[0]);
}

// DynamicQuantizeLinear(x) -> (y, y_scale, y_zero_point), uint8, the range taken from x at run
// time: scale = (max(x, 0) - min(x, 0)) / 255, zero point = saturate(round(-min(x, 0) / scale)),
// y = saturate(round(x / scale) + zero point), rounding halves to even. A range of 0 (x all
// zeros) divides by 1 instead: y and the zero point are 0 then.
void map_dynamic_quantize(NodeContext& c) {
  if (c.is_integer(0)) c.fail("quantizes an integer input; it takes floats");
  const ir::ValueId x = c.value(0);
  const ir::Shape xs = c.shape(0);
  std::vector<int64_t> axes;
  for (size_t d = 0; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  const ir::Attrs all = {{"axes", axes}, {"keepdims", int64_t{0}}};
  const ir::ValueId zero = c.float_constant(0, "zero");
  const ir::ValueId hi =
      c.add(OpKind::max, {c.add(OpKind::reduce_max, {x}, all, "max"), zero}, {}, "hi");
  const ir::ValueId lo = c.add(
      OpKind::min,
      {c.add(OpKind::neg,
             {c.add(OpKind::reduce_max, {c.add(OpKind::neg, {x}, {}, "neg")}, all, "neg_min")}, {},
             "min"),
       zero},
      {}, "lo");
  const ir::ValueId scale =
      c.add(OpKind::div, {c.add(OpKind::sub, {hi, lo}, {}, "range"), c.float_constant(255, "q")},
            {}, "scale");
  const ir::ValueId divisor = c.add(
      OpKind::where, {c.compare(scale, "equal", zero, "empty"), c.float_constant(1, "one"), scale},
      {}, "divisor");
  const ir::Attrs uint8 = {{"min", 0.0}, {"max", 255.0}};
  const ir::ValueId zp = c.add(
      OpKind::clip,
      {c.add(OpKind::round,
             {c.add(OpKind::div, {c.add(OpKind::neg, {lo}, {}, "neg_lo"), divisor}, {}, "zp_raw")},
             {}, "zp_rounded")},
      uint8, "zp_saturated");
  const ir::ValueId y = c.add(
      OpKind::clip,
      {c.add(OpKind::add,
             {c.add(OpKind::round, {c.add(OpKind::div, {x, divisor}, {}, "scaled")}, {}, "rounded"),
              zp},
             {}, "shifted")},
      uint8, "saturated");
  c.set_output(0, c.cast_to_integer(y, ""));
  if (c.output_count() > 1) c.set_output(1, scale);
  if (c.output_count() > 2) c.set_output(2, c.cast_to_integer(zp, "zero_point"));
}

}  // namespace

void add_qoperator_mappings(std::vector<OpMapping>& t) {
  t.push_back({"QLinearConv", map_qlinear_conv, nullptr});
  t.push_back({"QLinearMatMul", map_qlinear_matmul, nullptr});
  t.push_back({"ConvInteger", map_conv_integer, nullptr});
  t.push_back({"MatMulInteger", map_matmul_integer, nullptr});
  t.push_back({"DynamicQuantizeLinear", map_dynamic_quantize, nullptr});
}

}  // namespace cuvil::bench::onnx_import
