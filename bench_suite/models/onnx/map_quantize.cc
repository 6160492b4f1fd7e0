// QuantizeLinear and DequantizeLinear: the QDQ form of quantized ONNX models (PyTorch's
// quantization-aware training exports its fake-quantize modules so; ONNX Runtime's quantizer
// writes it). Quantized weights (DequantizeLinear of an integer initializer) fold to fp32 at
// import; quantization of activations runs as the elementwise chain the spec defines, so the
// model computes what ONNX Runtime computes, in fp32 kernels.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;

// The integer range of a quantized type.
struct QuantizedRange {
  int64_t lo = 0;
  int64_t hi = 255;
};

QuantizedRange range_of(NodeContext& c, int32_t type) {
  using onnx::TensorProto;
  switch (type) {
    case TensorProto::UINT8:
      return {0, 255};
    case TensorProto::INT8:
      return {-128, 127};
    case TensorProto::UINT16:
      return {0, 65535};
    case TensorProto::INT16:
      return {-32768, 32767};
    default:
      break;
  }
  c.fail("quantizes to " + onnx_type_name(type) +
         "; cuvil reads uint8, int8, uint16 and int16 quantization");
}

// Scale and zero point: constants, one value (per tensor) or one per position of `axis`
// (per axis): inputs 1 and 2 of both ops.
struct Quantization {
  HostTensor scale;       // f32
  HostTensor zero_point;  // i64, the scale's shape
  QuantizedRange range;
  int64_t axis = -1;  // -1: per tensor; else the normalized axis
  bool zero_point_is_zero() const {
    for (int64_t z : zero_point.i)
      if (z != 0) return false;
    return true;
  }
};

// `saturating`: QuantizeLinear, whose zero point's type sets the range it saturates to;
// DequantizeLinear reads any integer type (int32 biases among them) and saturates nothing.
Quantization read_quantization(NodeContext& c, const ir::Shape& x_shape, bool saturating) {
  if (c.attr_int("block_size", 0) != 0)
    c.fail("blocked quantization (block_size) is not supported");
  if (c.has_attr("saturate") && c.attr_int("saturate", 1) != 1)
    c.fail("saturate = 0 applies to float8 types, which cuvil does not read");
  Quantization q;
  const HostTensor& scale = c.constant(1);
  if (!scale.is_float()) c.fail("the scale (input 1) must be a float tensor");
  if (scale.shape.size() > 1) c.fail("the scale (input 1) must be a scalar or 1-D");
  q.scale = scale;
  for (float s : scale.f) {
    if (!(std::isfinite(s) && s != 0.0f)) {
      c.fail("the scale (input 1) holds " + std::to_string(s) + "; it must be finite and nonzero");
    }
  }
  int32_t type = onnx::TensorProto::UINT8;  // without a zero point
  if (c.has_input(2)) {
    const HostTensor& zp = c.constant(2);
    if (zp.is_float())
      c.fail("the zero point (input 2) is a float tensor (float8 is not supported)");
    if (zp.shape != scale.shape) {
      c.fail("the zero point (input 2) has shape " + ir::to_string(zp.shape) + "; the scale's is " +
             ir::to_string(scale.shape));
    }
    if (saturating && zp.source_type == 0) {
      c.fail(
          "the zero point (input 2) is computed; its element type (the quantized range) must "
          "come from an initializer or Constant");
    }
    type = zp.source_type;
    q.zero_point = zp;
  } else {
    q.zero_point = HostTensor::ints(scale.shape, std::vector<int64_t>(scale.f.size(), 0));
  }
  if (saturating) {
    q.range = range_of(c, type);
    for (int64_t z : q.zero_point.i) {
      if (z < q.range.lo || z > q.range.hi)
        c.fail("the zero point " + std::to_string(z) + " is outside its type's range");
    }
  }
  if (scale.numel() != 1) {  // per axis (one value, even 1-D as PyTorch writes it: per tensor)
    if (x_shape.empty()) c.fail("input 0 is a scalar; a per-axis scale needs an axis");
    q.axis = normalize_axis(c, c.attr_int("axis", 1), x_shape.size());
    if (scale.shape[0] != x_shape[static_cast<size_t>(q.axis)]) {
      c.fail("the scale (input 1) holds " + std::to_string(scale.shape[0]) + " values; axis " +
             std::to_string(q.axis) + " of input 0 has length " +
             std::to_string(x_shape[static_cast<size_t>(q.axis)]));
    }
  }
  return q;
}

// Which scale/zero-point entry each element of a tensor of `shape` uses: (k / inner) % length
// along the quantization axis, 0 per tensor.
struct ParameterIndex {
  int64_t inner = 1;
  int64_t length = 1;
  ParameterIndex(const Quantization& q, const ir::Shape& shape) {
    if (q.axis < 0) return;
    for (size_t d = static_cast<size_t>(q.axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    length = shape[static_cast<size_t>(q.axis)];
  }
  int64_t operator()(int64_t k) const { return (k / inner) % length; }
};

// A per-axis parameter laid out to broadcast against input 0 ([C, 1, ..., 1]); a scalar as is.
HostTensor broadcastable(const HostTensor& t, const Quantization& q, size_t rank) {
  HostTensor out = t;
  if (q.axis < 0) {
    out.shape = {};
  } else {
    out.shape.assign(rank - static_cast<size_t>(q.axis), 1);
    out.shape[0] = t.shape[0];
  }
  return out;
}

// y = saturate(round_half_even(x / scale) + zero_point), in fp32 as ONNX Runtime computes it.
bool fold_quantize(NodeContext& c) {
  const HostTensor& x = c.constant(0);
  const Quantization q = read_quantization(c, x.shape, true);
  const ParameterIndex parameter(q, x.shape);
  std::vector<int64_t> out(static_cast<size_t>(x.numel()));
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t p = parameter(k);
    const float v = std::nearbyint(static_cast<float>(x.number(k)) / q.scale.f[p]) +
                    static_cast<float>(q.zero_point.i[p]);
    const float clamped =
        std::fmin(std::fmax(v, static_cast<float>(q.range.lo)), static_cast<float>(q.range.hi));
    out[static_cast<size_t>(k)] = static_cast<int64_t>(clamped);  // NaN: fmax gives lo
  }
  c.set_constant_output(0, HostTensor::ints(x.shape, std::move(out)));
  return true;
}

void map_quantize(NodeContext& c) {
  if (c.is_integer(0)) c.fail("quantizes an integer input; it takes floats");
  const ir::Shape shape = c.shape(0);
  const Quantization q = read_quantization(c, shape, true);
  const ir::ValueId scale = c.constant_value(broadcastable(q.scale, q, shape.size()), "scale");
  ir::ValueId v = c.add(OpKind::div, {c.value(0), scale}, {}, "scaled");
  v = c.add(OpKind::round, {v}, {}, "rounded");  // halves to even
  if (!q.zero_point_is_zero()) {
    HostTensor zp = broadcastable(q.zero_point, q, shape.size());
    zp = HostTensor::floats(zp.shape, zp.to_floats());
    v = c.add(OpKind::add, {v, c.constant_value(zp, "zero_point")}, {}, "shifted");
  }
  v = c.add(OpKind::clip, {v},
            {{"min", static_cast<double>(q.range.lo)}, {"max", static_cast<double>(q.range.hi)}},
            "saturated");
  // v holds integers. Read only by DequantizeLinear (the QDQ pattern), it stays fp32, so the
  // pair is one elementwise chain that fuses into the producer's epilogue; anything else gets
  // the integer type (the cast is exact).
  if (c.output_read_only_by(0, "DequantizeLinear")) return c.set_output(0, v);
  c.set_output(0, c.cast_to_integer(v, ""));
}

// y = (x - zero_point) * scale.
bool fold_dequantize(NodeContext& c) {
  const HostTensor& x = c.constant(0);
  if (x.is_float()) c.fail("dequantizes a float tensor; it takes integers");
  const Quantization q = read_quantization(c, x.shape, false);
  const ParameterIndex parameter(q, x.shape);
  std::vector<float> out(static_cast<size_t>(x.numel()));
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t p = parameter(k);
    out[static_cast<size_t>(k)] =
        static_cast<float>(x.integer(k) - q.zero_point.i[p]) * q.scale.f[p];
  }
  c.set_constant_output(0, HostTensor::floats(x.shape, std::move(out)));
  return true;
}

void map_dequantize(NodeContext& c) {
  // A QuantizeLinear read only by DequantizeLinears hands over its integers as fp32.
  if (!c.is_integer(0) && c.input_writer(0) != "QuantizeLinear")
    c.fail("dequantizes a float input; it takes integers");
  const ir::Shape shape = c.shape(0);
  const Quantization q = read_quantization(c, shape, false);
  ir::ValueId v = c.value(0);
  if (!q.zero_point_is_zero()) {
    v = c.add(OpKind::sub,
              {v, c.constant_value(broadcastable(q.zero_point, q, shape.size()), "zero_point")}, {},
              "centred");
  }
  const ir::ValueId scale = c.constant_value(broadcastable(q.scale, q, shape.size()), "scale");
  c.set_output(0, c.add(OpKind::mul, {v, scale}));
}

}  // namespace

void add_quantize_mappings(std::vector<OpMapping>& t) {
  t.push_back({"QuantizeLinear", map_quantize, fold_quantize});
  t.push_back({"DequantizeLinear", map_dequantize, fold_dequantize});
}

}  // namespace cuvil::bench::onnx_import
