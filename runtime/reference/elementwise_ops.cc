// Unary activations and numpy-broadcasting binary arithmetic (also used by fused epilogues).
#include <cmath>

#include "passes/ir/error.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

float apply_unary(ir::OpKind op, float x) {
  const double v = x;
  switch (op) {
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
  for (int64_t i = 0; i < n; ++i) a.out[i] = apply_unary(a.node.op, a.in[0].data[i]);
}

}  // namespace cuvil::runtime::reference
