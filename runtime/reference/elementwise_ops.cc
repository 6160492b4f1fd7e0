// Unary activations, numpy-broadcasting binary arithmetic (also used by fused epilogues) and
// the broadcasting select.
#include <algorithm>
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
      return v > 0.0 ? x : 0.0f;
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

}  // namespace

void binary_broadcast(ir::OpKind op, const View& a, const View& b, const ir::Shape& out_shape,
                      float* out) {
  const std::vector<int64_t> sa = broadcast_strides(a.shape, out_shape);
  const std::vector<int64_t> sb = broadcast_strides(b.shape, out_shape);
  const size_t rank = out_shape.size();
  const int64_t n = ir::num_elements(out_shape);
  // Walk the output in row-major order, carrying each operand's offset like an odometer.
  std::vector<int64_t> index(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(apply_binary(op, a.data[oa], b.data[ob]));
    for (size_t d = rank; d-- > 0;) {
      oa += sa[d];
      ob += sb[d];
      if (++index[d] < out_shape[d]) break;
      oa -= sa[d] * out_shape[d];
      ob -= sb[d] * out_shape[d];
      index[d] = 0;
    }
  }
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
  const std::vector<int64_t> sc = broadcast_strides(cond.shape, a.out_shape);
  const std::vector<int64_t> sx = broadcast_strides(x.shape, a.out_shape);
  const std::vector<int64_t> sy = broadcast_strides(y.shape, a.out_shape);
  const size_t rank = a.out_shape.size();
  const int64_t n = ir::num_elements(a.out_shape);
  std::vector<int64_t> index(rank, 0);
  int64_t oc = 0, ox = 0, oy = 0;
  for (int64_t i = 0; i < n; ++i) {
    a.out[i] = cond.data[oc] != 0.0f ? x.data[ox] : y.data[oy];
    for (size_t d = rank; d-- > 0;) {
      oc += sc[d];
      ox += sx[d];
      oy += sy[d];
      if (++index[d] < a.out_shape[d]) break;
      oc -= sc[d] * a.out_shape[d];
      ox -= sx[d] * a.out_shape[d];
      oy -= sy[d] * a.out_shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace cuvil::runtime::reference
