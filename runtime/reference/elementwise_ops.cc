// Unary activations, numpy-broadcasting binary arithmetic (also used by fused epilogues) and
// the broadcasting select.
#include <algorithm>
#include <array>
#include <cmath>

#include "base/error.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

float apply_unary(ir::OpKind op, const ir::UnaryParams& p, float x) {
  const double v = x;
  switch (op) {
    case ir::OpKind::tanh:
      return static_cast<float>(std::tanh(v));
    case ir::OpKind::erf:
      return static_cast<float>(std::erf(v));
    case ir::OpKind::sqrt:
      return static_cast<float>(std::sqrt(v));
    case ir::OpKind::exp:
      return static_cast<float>(std::exp(v));
    case ir::OpKind::log:
      return static_cast<float>(std::log(v));
    case ir::OpKind::sin:
      return static_cast<float>(std::sin(v));
    case ir::OpKind::cos:
      return static_cast<float>(std::cos(v));
    case ir::OpKind::tan:
      return static_cast<float>(std::tan(v));
    case ir::OpKind::asin:
      return static_cast<float>(std::asin(v));
    case ir::OpKind::acos:
      return static_cast<float>(std::acos(v));
    case ir::OpKind::atan:
      return static_cast<float>(std::atan(v));
    case ir::OpKind::sinh:
      return static_cast<float>(std::sinh(v));
    case ir::OpKind::cosh:
      return static_cast<float>(std::cosh(v));
    case ir::OpKind::asinh:
      return static_cast<float>(std::asinh(v));
    case ir::OpKind::acosh:
      return static_cast<float>(std::acosh(v));
    case ir::OpKind::atanh:
      return static_cast<float>(std::atanh(v));
    case ir::OpKind::floor:
      return std::floor(x);
    case ir::OpKind::ceil:
      return std::ceil(x);
    case ir::OpKind::round:
      return std::nearbyint(x);  // the default rounding mode: half to even
    case ir::OpKind::sign:
      return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;  // 0 and NaN stay as they are
    case ir::OpKind::neg:
      return -x;
    case ir::OpKind::abs:
      return std::fabs(x);
    case ir::OpKind::clip:
      // NaN stays NaN (as PyTorch's clamp), which std::clamp would not promise.
      return std::isnan(x) ? x : std::min(std::max(x, p.a), p.b);
    case ir::OpKind::hard_sigmoid:
      return static_cast<float>(std::clamp(p.a * v + p.b, 0.0, 1.0));
    case ir::OpKind::hard_swish:
      return static_cast<float>(v * std::clamp(v + 3.0, 0.0, 6.0) / 6.0);
    case ir::OpKind::leaky_relu:
      return static_cast<float>(v >= 0.0 ? v : p.a * v);
    case ir::OpKind::relu:
      return v < 0.0 ? 0.0f : x;  // NaN passes, as PyTorch's relu
    case ir::OpKind::silu:
      return static_cast<float>(v / (1.0 + std::exp(-v)));
    case ir::OpKind::gelu:
      return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    case ir::OpKind::sigmoid:
      return static_cast<float>(1.0 / (1.0 + std::exp(-v)));
    default:
      break;
  }
  CUVIL_CHECK(false, "not a unary op: " + std::string(ir::to_string(op)));
}

namespace {

double apply_binary(ir::OpKind op, double a, double b) {
  switch (op) {
    case ir::OpKind::add:
      return a + b;
    case ir::OpKind::sub:
      return a - b;
    case ir::OpKind::mul:
      return a * b;
    case ir::OpKind::div:
      return a / b;
    case ir::OpKind::pow:
      return std::pow(a, b);
    case ir::OpKind::max:
      return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b);
    case ir::OpKind::min:
      return std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b);
    default:
      break;
  }
  CUVIL_CHECK(false, "not a binary op: " + std::string(ir::to_string(op)));
}

// Calls f(i, off) for every element i of out_shape in row-major order, off[k] the element of
// operand k it reads under numpy broadcasting: each offset carried like an odometer.
template <size_t N, class F>
void for_each_broadcast(const ir::Shape& out_shape, const std::array<const View*, N>& operands,
                        F&& f) {
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) strides[k] = broadcast_strides(operands[k]->shape, out_shape);
  const size_t rank = out_shape.size();
  const int64_t n = ir::num_elements(out_shape);
  std::vector<int64_t> index(rank, 0);
  std::array<int64_t, N> off{};
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++index[d] < out_shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * out_shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace

void binary_broadcast(ir::OpKind op, const View& a, const View& b, const ir::Shape& out_shape,
                      float* out) {
  for_each_broadcast<2>(out_shape, {&a, &b}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    out[i] = static_cast<float>(apply_binary(op, a.data[o[0]], b.data[o[1]]));
  });
}

void run_binary(const OpArgs& a) {
  binary_broadcast(a.node.op, a.in[0], a.in[1], a.out_shape, a.out);
}

void run_unary(const OpArgs& a) {
  const int64_t n = a.in[0].numel();
  const ir::UnaryParams p = ir::unary_params(a.node.op, a.node.attrs);
  for (int64_t i = 0; i < n; ++i) a.out[i] = apply_unary(a.node.op, p, a.in[0].data[i]);
}

void run_where(const OpArgs& a) {
  const View &cond = a.in[0], &x = a.in[1], &y = a.in[2];
  for_each_broadcast<3>(a.out_shape, {&cond, &x, &y},
                        [&](int64_t i, const std::array<int64_t, 3>& o) {
                          a.out[i] = cond.data[o[0]] != 0.0f ? x.data[o[1]] : y.data[o[2]];
                        });
}

void run_compare(const OpArgs& a) {
  const ir::CompareMode mode = ir::compare_mode(a.node.attrs);
  const View &x = a.in[0], &y = a.in[1];
  for_each_broadcast<2>(a.out_shape, {&x, &y}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    a.out[i] = ir::compare_holds(mode, x.data[o[0]], y.data[o[1]]) ? 1.0f : 0.0f;
  });
}

void run_cast(const OpArgs& a) {
  const bool to_integer = a.node.attrs.get_string("dtype", "f32") == "i32";
  const View& x = a.in[0];
  for (int64_t i = 0; i < ir::num_elements(a.out_shape); ++i)
    a.out[i] = to_integer ? ir::truncate_to_i32(x.data[i]) : x.data[i];
}

}  // namespace cuvil::runtime::reference
