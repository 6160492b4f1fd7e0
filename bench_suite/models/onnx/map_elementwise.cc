// Elementwise operators: arithmetic (Add, Sub, Mul, Div, Pow, Max, Min, Sum, Mean), one-op
// activations and math (Relu, Sigmoid, Tanh, Erf, Sqrt, Exp, Log, Neg, Abs, Reciprocal, Floor,
// Ceil, Round, Sign, Sin, Cos, Clip, HardSigmoid, HardSwish, LeakyRelu), Softmax/LogSoftmax,
// Where, Trilu, Cast, comparisons, IsNaN, IsInf and logic, Mod. Composed activations
// (Elu, Softplus, Gelu's approximation, ...) are map_activation.cc's.
#include <onnx/defs/attr_proto_util.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "base/error.h"
#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;

// ---- folding on constants -------------------------------------------------------------------

// Applies f elementwise over the numpy broadcast of a and b. Integer results stay integers when
// both operands are integers; `kind_out` overrides the result kind (comparisons give booleans).
template <class F>
HostTensor fold_binary(const NodeContext& c, const HostTensor& a, const HostTensor& b, F f,
                       std::optional<HostTensor::Kind> kind_out = std::nullopt) {
  const ir::Shape shape = broadcast_shapes(c, a.shape, b.shape);
  const HostTensor ab = broadcast_tensor(a, shape), bb = broadcast_tensor(b, shape);
  const bool ints = !a.is_float() && !b.is_float();
  const HostTensor::Kind kind = kind_out ? *kind_out
                                : ints   ? HostTensor::Kind::i64
                                         : HostTensor::Kind::f32;
  HostTensor out;
  out.kind = kind;
  out.shape = shape;
  const int64_t n = ir::num_elements(shape);
  for (int64_t k = 0; k < n; ++k) {
    if (ints && kind != HostTensor::Kind::f32) {
      out.i.push_back(saturating_int64(f(ab.number(k), bb.number(k), ab.i[static_cast<size_t>(k)],
                                         bb.i[static_cast<size_t>(k)])));
    } else {
      const double v = f(ab.number(k), bb.number(k), ab.integer(k), bb.integer(k));
      if (kind == HostTensor::Kind::f32) {
        out.f.push_back(static_cast<float>(v));
      } else {
        out.i.push_back(saturating_int64(v));
      }
    }
  }
  return out;
}

// Integer results wrap in two's complement, as ONNX Runtime's do (the builtins define what
// overflowing int64 arithmetic leaves undefined).
double arith(OpKind op, double x, double y, int64_t xi, int64_t yi, bool ints) {
  int64_t r = 0;
  switch (op) {
    case OpKind::add:
      return ints ? (__builtin_add_overflow(xi, yi, &r), static_cast<double>(r)) : x + y;
    case OpKind::sub:
      return ints ? (__builtin_sub_overflow(xi, yi, &r), static_cast<double>(r)) : x - y;
    case OpKind::mul:
      return ints ? (__builtin_mul_overflow(xi, yi, &r), static_cast<double>(r)) : x * y;
    case OpKind::div:
      if (ints && yi == -1)
        return (__builtin_sub_overflow(int64_t{0}, xi, &r), static_cast<double>(r));
      if (ints) return yi == 0 ? 0.0 : static_cast<double>(xi / yi);  // truncates, as ONNX Runtime
      return x / y;
    case OpKind::pow:
      return std::pow(x, y);
    case OpKind::max:
      return std::max(x, y);
    case OpKind::min:
      return std::min(x, y);
    default:
      return 0;
  }
}

OpKind binary_kind(const std::string& op) {
  if (op == "Add" || op == "Sum" || op == "Mean") return OpKind::add;
  if (op == "Sub") return OpKind::sub;
  if (op == "Mul") return OpKind::mul;
  if (op == "Div") return OpKind::div;
  if (op == "Pow") return OpKind::pow;
  if (op == "Max") return OpKind::max;
  return OpKind::min;
}

bool fold_arith(NodeContext& c) {
  const OpKind op = binary_kind(c.op_type());
  HostTensor acc = c.constant(0);
  size_t count = 1;
  for (size_t i = 1; i < c.input_count(); ++i) {
    if (!c.has_input(i)) continue;
    const HostTensor& b = c.constant(i);
    const bool ints = !acc.is_float() && !b.is_float();
    acc = fold_binary(c, acc, b, [&](double x, double y, int64_t xi, int64_t yi) {
      return arith(op, x, y, xi, yi, ints);
    });
    ++count;
  }
  if (c.op_type() == "Mean") {
    for (float& v : acc.f) v /= static_cast<float>(count);
    for (int64_t& v : acc.i) v /= static_cast<int64_t>(count);
  }
  c.set_constant_output(0, acc);
  return true;
}

// Mod on constants (index arithmetic: Swin's window padding, shifted-window masks). fmod 0: the
// integer remainder with the divisor's sign (Python's %); fmod 1: C's fmod, the dividend's sign.
// A zero integer divisor is refused (ONNX leaves its result undefined).
bool fold_mod(NodeContext& c) {
  const bool c_fmod = c.attr_int("fmod", 0) != 0;
  const HostTensor& a = c.constant(0);
  const HostTensor& b = c.constant(1);
  const bool ints = !a.is_float() && !b.is_float();
  if (!ints && !c_fmod) c.fail("fmod must be 1 for floating-point inputs");
  c.set_constant_output(0, fold_binary(c, a, b, [&](double x, double y, int64_t xi, int64_t yi) {
                          if (!ints) return std::fmod(x, y);
                          if (yi == 0) c.fail("divides by zero");
                          if (yi == -1) return 0.0;  // INT64_MIN % -1 overflows
                          int64_t r = xi % yi;
                          if (!c_fmod && r != 0 && ((r < 0) != (yi < 0))) r += yi;
                          return static_cast<double>(r);
                        }));
  return true;
}

bool fold_compare(NodeContext& c) {
  const std::string& op = c.op_type();
  const auto kind = HostTensor::Kind::boolean;
  auto f = [&](double x, double y, int64_t xi, int64_t yi) -> double {
    if (op == "Equal") return xi == yi && x == y;
    if (op == "Less") return x < y;
    if (op == "LessOrEqual") return x <= y;
    if (op == "Greater") return x > y;
    if (op == "GreaterOrEqual") return x >= y;
    if (op == "And") return (xi != 0) && (yi != 0);
    if (op == "Or") return (xi != 0) || (yi != 0);
    return (xi != 0) != (yi != 0);  // Xor
  };
  c.set_constant_output(0, fold_binary(c, c.constant(0), c.constant(1), f, kind));
  return true;
}

// The trigonometric and hyperbolic functions besides Sin and Cos, each an IR op of its own name.
const std::map<std::string, OpKind>& trigonometric_ops() {
  static const std::map<std::string, OpKind> ops = {
      {"Tan", OpKind::tan},     {"Asin", OpKind::asin},   {"Acos", OpKind::acos},
      {"Atan", OpKind::atan},   {"Sinh", OpKind::sinh},   {"Cosh", OpKind::cosh},
      {"Asinh", OpKind::asinh}, {"Acosh", OpKind::acosh}, {"Atanh", OpKind::atanh}};
  return ops;
}

bool is_trigonometric(const std::string& op) {
  return trigonometric_ops().count(op) != 0;
}

// Unary ops on constants, in double.
double unary_value(const std::string& op, double v, const NodeContext& c) {
  if (op == "Relu") return v > 0 ? v : 0;
  if (op == "Sigmoid") return 1.0 / (1.0 + std::exp(-v));
  if (op == "Tanh") return std::tanh(v);
  if (op == "Erf") return std::erf(v);
  if (op == "Sqrt") return std::sqrt(v);
  if (op == "Exp") return std::exp(v);
  if (op == "Log") return std::log(v);
  if (op == "Neg") return -v;
  if (op == "Abs") return std::fabs(v);
  if (op == "Reciprocal") return 1.0 / v;
  if (op == "Floor") return std::floor(v);
  if (op == "Ceil") return std::ceil(v);
  if (op == "Round") return std::nearbyint(v);  // half to even, as ONNX
  if (op == "Not") return v == 0;
  if (op == "Sign") return v > 0 ? 1 : v < 0 ? -1 : v;  // 0 and NaN stay as they are
  if (op == "Sin") return std::sin(v);
  if (op == "Cos") return std::cos(v);
  if (op == "Tan") return std::tan(v);
  if (op == "Asin") return std::asin(v);
  if (op == "Acos") return std::acos(v);
  if (op == "Atan") return std::atan(v);
  if (op == "Sinh") return std::sinh(v);
  if (op == "Cosh") return std::cosh(v);
  if (op == "Asinh") return std::asinh(v);
  if (op == "Acosh") return std::acosh(v);
  if (op == "Atanh") return std::atanh(v);
  c.fail("cannot fold");
}

bool fold_unary(NodeContext& c) {
  HostTensor t = c.constant(0);
  const std::string& op = c.op_type();
  if (t.is_float()) {
    for (float& v : t.f) v = static_cast<float>(unary_value(op, v, c));
  } else {
    const bool float_result = op == "Sigmoid" || op == "Tanh" || op == "Erf" || op == "Sqrt" ||
                              op == "Exp" || op == "Log" || op == "Reciprocal" || op == "Sin" ||
                              op == "Cos" || is_trigonometric(op);
    if (float_result) c.fail("a floating-point function of integers");
    for (int64_t& v : t.i) v = static_cast<int64_t>(unary_value(op, static_cast<double>(v), c));
    if (op == "Not") t.kind = HostTensor::Kind::boolean;
  }
  c.set_constant_output(0, t);
  return true;
}

bool fold_where(NodeContext& c) {
  const HostTensor &cond = c.constant(0), &x = c.constant(1), &y = c.constant(2);
  const ir::Shape shape = broadcast_shapes(c, broadcast_shapes(c, cond.shape, x.shape), y.shape);
  const HostTensor cb = broadcast_tensor(cond, shape), xb = broadcast_tensor(x, shape),
                   yb = broadcast_tensor(y, shape);
  HostTensor out;
  out.shape = shape;
  out.kind = x.is_float() || y.is_float() ? HostTensor::Kind::f32 : x.kind;
  for (int64_t k = 0; k < ir::num_elements(shape); ++k) {
    const bool pick = cb.number(k) != 0;
    if (out.is_float()) {
      out.f.push_back(static_cast<float>(pick ? xb.number(k) : yb.number(k)));
    } else {
      out.i.push_back(pick ? xb.i[static_cast<size_t>(k)] : yb.i[static_cast<size_t>(k)]);
    }
  }
  c.set_constant_output(0, out);
  return true;
}

// Trilu's mask over the last two axes [n, m]: kept where j - i >= k (upper) or <= k (lower).
HostTensor trilu_mask(NodeContext& c, const ir::Shape& shape) {
  if (shape.size() < 2) c.fail("input must have rank >= 2");
  const int64_t k = c.has_input(1) ? c.constant(1).integer(0) : 0;
  const bool upper = c.attr_int("upper", 1) != 0;
  const int64_t n = shape[shape.size() - 2], m = shape.back();
  check_fold_size({n, m});
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      const int64_t d = j - i;  // |d| < 2^27: the mask's size is bounded above
      keep.push_back(upper ? d >= k : d <= k);
    }
  }
  return HostTensor::ints({n, m}, keep, HostTensor::Kind::boolean);
}

bool fold_trilu(NodeContext& c) {
  const HostTensor& x = c.constant(0);
  const HostTensor mask = broadcast_tensor(trilu_mask(c, x.shape), x.shape);
  HostTensor out = x;
  for (int64_t e = 0; e < x.numel(); ++e) {
    if (mask.i[static_cast<size_t>(e)] != 0) continue;
    if (out.is_float()) {
      out.f[static_cast<size_t>(e)] = 0.0f;
    } else {
      out.i[static_cast<size_t>(e)] = 0;
    }
  }
  c.set_constant_output(0, out);
  return true;
}

bool fold_cast(NodeContext& c) {
  const int64_t to = c.attr_int("to", 0);
  HostTensor t = c.constant(0);
  if (is_float_type(to)) {
    if (!t.is_float()) t = HostTensor::floats(t.shape, t.to_floats());
  } else if (to == onnx::TensorProto::BOOL) {
    std::vector<int64_t> v(static_cast<size_t>(t.numel()));
    for (int64_t k = 0; k < t.numel(); ++k) v[static_cast<size_t>(k)] = t.number(k) != 0;
    t = HostTensor::ints(t.shape, v, HostTensor::Kind::boolean);
  } else if (to == onnx::TensorProto::STRING || to == 0) {
    c.fail("cast to " + onnx_type_name(static_cast<int32_t>(to)) + " is not supported");
  } else {
    t = HostTensor::ints(t.shape, t.to_ints());
  }
  t.source_type = static_cast<int32_t>(to);
  c.set_constant_output(0, t);
  return true;
}

// ---- run-time mappings ----------------------------------------------------------------------

void require_float(NodeContext& c, size_t i) {
  if (!c.is_constant(i) && c.is_integer(i)) {
    c.fail("integer arithmetic on run-time values is not supported (input " + std::to_string(i) +
           ")");
  }
}

// Integer arithmetic that floats carry exactly (integers are stored as fp32, exact up to 2^24):
// position ids counted from a mask (RoBERTa's cumsum(mask) * mask + padding_idx).
bool exact_on_integers(OpKind op) {
  return op == OpKind::add || op == OpKind::sub || op == OpKind::mul || op == OpKind::max ||
         op == OpKind::min;
}

// Integer division of run-time integers: the fp32 quotient truncated toward zero, as ONNX
// Runtime's C++ division does. Exact below 2^24: a quotient that is not an integer lies at least
// 1/|b| from one, further than fp32's rounding of a/b moves it.
void map_integer_div(NodeContext& c) {
  c.set_output(0,
               c.cast_to_integer(c.add(OpKind::div, {c.value(0), c.value(1)}, {}, "quotient"), ""));
}

void map_arith(NodeContext& c) {
  const OpKind op = binary_kind(c.op_type());
  if (op == OpKind::div && c.input_count() == 2 && c.is_integer(0) && c.is_integer(1))
    return map_integer_div(c);
  std::vector<size_t> present;
  bool integers = true;
  for (size_t i = 0; i < c.input_count(); ++i) {
    if (c.has_input(i)) {
      present.push_back(i);
      integers = integers && c.is_integer(i);
    }
  }
  if (!(integers && exact_on_integers(op) && c.op_type() != "Mean")) {
    for (size_t i : present) require_float(c, i);
  }
  if (present.empty()) c.fail("needs at least one input");
  const bool commutative =
      op == OpKind::add || op == OpKind::mul || op == OpKind::max || op == OpKind::min;
  // A constant first operand of a commutative op goes second, so fusion sees the running result
  // on the left.
  if (commutative && present.size() >= 2 && c.is_constant(present[0]) && !c.is_constant(present[1]))
    std::swap(present[0], present[1]);
  ir::ValueId acc = c.value(present[0]);
  for (size_t k = 1; k < present.size(); ++k) {
    acc = c.add(op, {acc, c.value(present[k])}, {},
                k + 1 < present.size() ? "part" + std::to_string(k) : "");
  }
  if (c.op_type() == "Mean" && present.size() > 1) {
    const ir::ValueId scale = c.constant_value(
        HostTensor::floats({}, {1.0f / static_cast<float>(present.size())}), "scale");
    acc = c.add(OpKind::mul, {acc, scale}, {}, "mean");
  }
  c.set_output(0, acc);
}

void map_unary(NodeContext& c) {
  const std::string& op = c.op_type();
  // Integer-valued results of integers stay integers (shape inference types them i32).
  if (!(op == "Neg" || op == "Abs" || op == "Sign" || op == "Floor" || op == "Ceil" ||
        op == "Round"))
    require_float(c, 0);
  const ir::ValueId x = c.value(0);
  if (op == "Reciprocal") {
    const ir::ValueId one = c.float_constant(1.0f, "one");
    return c.set_output(0, c.add(OpKind::div, {one, x}));
  }
  // ONNX operators that are one IR op without attributes.
  static const std::map<std::string, OpKind> plain = {
      {"Relu", OpKind::relu},   {"Sigmoid", OpKind::sigmoid},
      {"Tanh", OpKind::tanh},   {"Erf", OpKind::erf},
      {"Sqrt", OpKind::sqrt},   {"Exp", OpKind::exp},
      {"Log", OpKind::log},     {"Neg", OpKind::neg},
      {"Abs", OpKind::abs},     {"HardSwish", OpKind::hard_swish},
      {"Sin", OpKind::sin},     {"Cos", OpKind::cos},
      {"Floor", OpKind::floor}, {"Ceil", OpKind::ceil},
      {"Round", OpKind::round}, {"Sign", OpKind::sign}};
  OpKind kind = OpKind::relu;
  ir::Attrs attrs;
  if (auto it = plain.find(op); it != plain.end()) {
    kind = it->second;
  } else if (auto trig = trigonometric_ops().find(op); trig != trigonometric_ops().end()) {
    kind = trig->second;
  } else if (op == "HardSigmoid") {
    kind = OpKind::hard_sigmoid;
    attrs = {{"alpha", c.attr_float("alpha", 0.2)}, {"beta", c.attr_float("beta", 0.5)}};
  } else if (op == "LeakyRelu") {
    kind = OpKind::leaky_relu;
    attrs = {{"alpha", c.attr_float("alpha", 0.01)}};
  } else {
    c.fail("cannot be computed at run time (only on constants)");
  }
  c.set_output(0, c.add(kind, {x}, attrs));
}

// Clip's bounds: attributes before opset 11, optional constant inputs from 11; unbounded where
// absent. min above max is refused (the run-time and the constant-folding paths alike).
std::pair<double, double> clip_bounds(NodeContext& c) {
  double lo = -std::numeric_limits<double>::infinity(),
         hi = std::numeric_limits<double>::infinity();
  if (c.opset() < 11) {
    lo = c.attr_float("min", lo);
    hi = c.attr_float("max", hi);
  } else {
    if (c.has_input(1)) lo = c.constant(1).number(0);
    if (c.has_input(2)) hi = c.constant(2).number(0);
  }
  if (lo > hi) c.fail("min is greater than max");
  return {lo, hi};
}

// Bounds known only at run time (torch.clamp(x, min=t.mean())) or integers to clamp (indices
// computed at run time): a max, then a min, which keep integers integers.
bool clip_as_max_min(NodeContext& c) {
  if (c.opset() < 11) return false;
  if (!c.is_constant(0) && c.is_integer(0)) return true;
  return (c.has_input(1) && !c.is_constant(1)) || (c.has_input(2) && !c.is_constant(2));
}

void map_clip(NodeContext& c) {
  if (clip_as_max_min(c)) {
    ir::ValueId y = c.value(0);
    if (c.has_input(1)) y = c.add(OpKind::max, {y, c.value(1)}, {}, c.has_input(2) ? "lower" : "");
    if (c.has_input(2)) y = c.add(OpKind::min, {y, c.value(2)});
    return c.set_output(0, y);
  }
  require_float(c, 0);
  const auto [lo, hi] = clip_bounds(c);
  if (lo == 0 && hi == std::numeric_limits<double>::infinity())
    return c.set_output(0, c.add(OpKind::relu, {c.value(0)}));
  c.set_output(0, c.add(OpKind::clip, {c.value(0)}, {{"min", lo}, {"max", hi}}));
}

bool fold_clip(NodeContext& c) {
  const auto [lo, hi] = clip_bounds(c);  // std::clamp's bounds must be ordered
  HostTensor t = c.constant(0);
  for (float& v : t.f) v = static_cast<float>(std::clamp<double>(v, lo, hi));
  for (int64_t& v : t.i)
    v = static_cast<int64_t>(std::clamp<double>(static_cast<double>(v), lo, hi));
  c.set_constant_output(0, t);
  return true;
}

// Softmax and LogSoftmax. Before opset 13 the input is coerced to 2-D at `axis` (default 1);
// from 13 the op runs along one axis (default -1).
void map_softmax(NodeContext& c) {
  require_float(c, 0);
  const ir::Shape in = c.shape(0);
  const bool legacy = c.opset() < 13;
  const int64_t axis = normalize_axis(c, c.attr_int("axis", legacy ? 1 : -1), in.size());
  ir::ValueId x = c.value(0);
  ir::ValueId y;
  if (legacy && axis != static_cast<int64_t>(in.size()) - 1) {
    int64_t a = 1, b = 1;
    for (size_t d = 0; d < in.size(); ++d) (static_cast<int64_t>(d) < axis ? a : b) *= in[d];
    x = c.add(OpKind::reshape, {x}, {{"shape", ir::Shape{a, b}}}, "flat");
    y = c.add(OpKind::softmax, {x}, {{"axis", int64_t{-1}}}, "softmax");
    y = c.add(OpKind::reshape, {y}, {{"shape", in}}, c.op_type() == "LogSoftmax" ? "unflat" : "");
  } else {
    y = c.add(OpKind::softmax, {x}, {{"axis", axis}}, c.op_type() == "LogSoftmax" ? "softmax" : "");
  }
  if (c.op_type() == "LogSoftmax") y = c.add(OpKind::log, {y});
  c.set_output(0, y);
}

void map_where(NodeContext& c) {
  require_float(c, 1);
  require_float(c, 2);
  c.set_output(0, c.add(OpKind::where, {c.value(0), c.value(1), c.value(2)}));
}

// At run time a where against the constant mask: exact for infinities, which a multiply by the
// mask would turn into NaN (torch.triu of a -inf matrix, causal masks).
void map_trilu(NodeContext& c) {
  require_float(c, 0);
  const ir::ValueId mask = c.constant_value(trilu_mask(c, c.shape(0)), "mask");
  const ir::ValueId zero = c.float_constant(0.0f, "zero");
  c.set_output(0, c.add(OpKind::where, {mask, c.value(0), zero}));
}

// Storage is fp32 whatever the dtype, so casts between floats and between integers move nothing;
// an integer -> float cast (BERT's attention mask, 1.0 - mask.float()) changes only the dtype
// (the IR's cast to f32); a cast to bool is x != 0; a float -> integer cast is the IR's cast to
// i32, toward zero.
void map_cast(NodeContext& c) {
  const int64_t to = c.attr_int("to", 0);
  if (to == onnx::TensorProto::BOOL) {  // x != 0, from floats or integers (a padding mask)
    const ir::ValueId zero = c.float_constant(0.0f, "zero");
    return c.set_output(0, c.compare(c.value(0), "not_equal", zero, ""));
  }
  if (c.is_integer(0) && is_float_type(to))
    return c.set_output(0, c.add(OpKind::cast, {c.value(0)}, {{"dtype", std::string("f32")}}));
  if (is_float_type(to) || c.is_integer(0)) return c.set_output(0, c.value(0));
  if (to == onnx::TensorProto::STRING || to == 0)
    c.fail("cast to " + onnx_type_name(static_cast<int32_t>(to)) + " is not supported");
  // Toward zero, as C++ and ONNX Runtime cast; saturated at the int32 range.
  c.set_output(0, c.cast_to_integer(c.value(0), ""));
}

// CastLike(x, like): Cast to like's element type: the type a constant was decoded from, else
// float for floats, bool for booleans and int64 for other integers (the IR keeps integers as
// exact floats, so the integer width does not matter).
void map_cast_like(NodeContext& c) {
  int64_t to = onnx::TensorProto::FLOAT;
  if (c.is_constant(1)) {
    const HostTensor& like = c.constant(1);
    to = like.source_type != 0                    ? like.source_type
         : like.kind == HostTensor::Kind::boolean ? onnx::TensorProto::BOOL
         : like.is_float()                        ? onnx::TensorProto::FLOAT
                                                  : onnx::TensorProto::INT64;
  } else if (c.is_integer(1)) {
    to = onnx::TensorProto::INT64;
  }
  onnx::NodeProto cast;
  cast.set_op_type("Cast");
  *cast.add_attribute() = onnx::MakeAttribute("to", to);
  c.set_output_value(0, c.import_composed(cast, {c.input(0)}, 1)[0]);
}

// Mod at run time: a - b * q with q = floor(a / b) (fmod 0, the divisor's sign) or trunc(a / b)
// (fmod 1, the dividend's sign). Exact for integers below 2^24 (map_integer_div says why); for
// floats (fmod 1, torch.fmod) it is the formula PyTorch's own export writes for remainder, within
// a rounding of a / b of C's exact fmod.
void map_mod(NodeContext& c) {
  const bool c_fmod = c.attr_int("fmod", 0) != 0;
  const bool integers = c.is_integer(0) && c.is_integer(1);
  if (!integers && !c_fmod) c.fail("fmod must be 1 for floating-point inputs");
  const ir::ValueId a = c.value(0), b = c.value(1);
  const ir::ValueId ratio = c.add(OpKind::div, {a, b}, {}, "ratio");
  ir::ValueId q;
  if (!c_fmod) {
    q = c.add(OpKind::floor, {ratio}, {}, "quotient");
  } else if (integers) {
    q = c.cast_to_integer(ratio, "quotient");
  } else {  // trunc without the int32 range of a cast: floor above zero, ceil below
    const ir::ValueId zero = c.float_constant(0.0f, "zero");
    q = c.add(OpKind::where,
              {c.compare(ratio, "less", zero, "negative"), c.add(OpKind::ceil, {ratio}, {}, "up"),
               c.add(OpKind::floor, {ratio}, {}, "down")},
              {}, "quotient");
  }
  const ir::ValueId r = c.add(OpKind::sub, {a, c.add(OpKind::mul, {q, b}, {}, "multiple")}, {},
                              integers ? "remainder" : "");
  c.set_output(0, integers ? c.cast_to_integer(r, "") : r);
}

// IsNaN: x != x. IsInf: |x| (or x) equal to infinity, by detect_positive and detect_negative.
void map_is_nan_inf(NodeContext& c) {
  require_float(c, 0);
  const ir::ValueId x = c.value(0);
  if (c.op_type() == "IsNaN") return c.set_output(0, c.compare(x, "not_equal", x, ""));
  const bool positive = c.attr_int("detect_positive", 1) != 0;
  const bool negative = c.attr_int("detect_negative", 1) != 0;
  if (!positive && !negative) {
    std::vector<int64_t> zeros(static_cast<size_t>(ir::num_elements(c.shape(0))), 0);
    return c.set_constant_output(0, HostTensor::ints(c.shape(0), zeros, HostTensor::Kind::boolean));
  }
  const float inf = std::numeric_limits<float>::infinity();
  const ir::ValueId target = c.float_constant(negative && !positive ? -inf : inf, "infinity");
  const ir::ValueId v = positive && negative ? c.add(OpKind::abs, {x}, {}, "abs") : x;
  c.set_output(0, c.compare(v, "equal", target, ""));
}

void map_compare(NodeContext& c) {
  static const std::map<std::string, ir::CompareMode> modes = {
      {"Equal", ir::CompareMode::equal},
      {"Less", ir::CompareMode::less},
      {"LessOrEqual", ir::CompareMode::less_equal},
      {"Greater", ir::CompareMode::greater},
      {"GreaterOrEqual", ir::CompareMode::greater_equal}};
  const ir::CompareMode mode = modes.at(c.op_type());
  c.set_output(0, c.add(OpKind::compare, {c.value(0), c.value(1)},
                        {{"mode", std::string(ir::to_string(mode))}}));
}

// Logic on run-time booleans, which are 0/1 floats: arithmetic that is exact on 0 and 1.
void map_logic(NodeContext& c) {
  const std::string& op = c.op_type();
  if (op == "Not") {
    const ir::ValueId one = c.integer_constant(1, "one");
    return c.set_output(0, c.add(OpKind::sub, {one, c.value(0)}));
  }
  const ir::ValueId x = c.value(0), y = c.value(1);
  if (op == "And") return c.set_output(0, c.add(OpKind::mul, {x, y}));
  if (op == "Or") return c.set_output(0, c.add(OpKind::max, {x, y}));
  // Xor
  c.set_output(0, c.add(OpKind::abs, {c.add(OpKind::sub, {x, y}, {}, "diff")}));
}

}  // namespace

void add_elementwise_mappings(std::vector<OpMapping>& t) {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"})
    t.push_back({op, map_arith, fold_arith});
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Neg", "Abs",
                         "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos"})
    t.push_back({op, map_unary, fold_unary});
  for (const auto& [op, kind] : trigonometric_ops())
    t.push_back({op.c_str(), map_unary, fold_unary});
  for (const char* op : {"HardSigmoid", "HardSwish", "LeakyRelu"})
    t.push_back({op, map_unary, nullptr});
  t.push_back({"Not", map_logic, fold_unary});
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
    t.push_back({op, map_compare, fold_compare});
  for (const char* op : {"And", "Or", "Xor"}) t.push_back({op, map_logic, fold_compare});
  t.push_back({"Mod", map_mod, fold_mod});
  t.push_back({"Clip", map_clip, fold_clip});
  t.push_back({"IsNaN", map_is_nan_inf, nullptr});
  t.push_back({"IsInf", map_is_nan_inf, nullptr});
  t.push_back({"Softmax", map_softmax, nullptr});
  t.push_back({"LogSoftmax", map_softmax, nullptr});
  t.push_back({"Where", map_where, fold_where});
  t.push_back({"Trilu", map_trilu, fold_trilu});
  t.push_back({"Cast", map_cast, fold_cast});
  t.push_back({"CastLike", map_cast_like, nullptr});
}

}  // namespace cuvil::bench::onnx_import
