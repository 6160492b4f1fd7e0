// linear (x @ w^T + bias, PyTorch weight layout) and batched matmul with broadcasting.
#include <algorithm>

#include "base/error.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

void run_linear(const OpArgs& a) {
  const View& x = a.in[0];
  const View& w = a.in[1];
  const float* bias = a.in.size() > 2 ? a.in[2].data : nullptr;
  const int64_t n_out = w.shape[0];
  const int64_t k = w.shape[1];
  const int64_t rows = x.numel() / k;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data + r * k;
    for (int64_t j = 0; j < n_out; ++j) {
      const float* wj = w.data + j * k;
      double acc = bias ? bias[j] : 0.0;
      for (int64_t i = 0; i < k; ++i) acc += static_cast<double>(xr[i]) * wj[i];
      a.out[r * n_out + j] = static_cast<float>(acc);
    }
  }
}

void run_matmul(const OpArgs& a) {
  const View& lhs = a.in[0];
  const View& rhs = a.in[1];
  const int64_t m = lhs.shape[lhs.shape.size() - 2];
  const int64_t k = lhs.shape.back();
  const int64_t n = rhs.shape.back();
  const ir::Shape batch(a.out_shape.begin(), a.out_shape.end() - 2);
  // Batch strides in whole matrices; 0 where an operand is broadcast.
  const std::vector<int64_t> sa =
      broadcast_strides(ir::Shape(lhs.shape.begin(), lhs.shape.end() - 2), batch);
  const std::vector<int64_t> sb =
      broadcast_strides(ir::Shape(rhs.shape.begin(), rhs.shape.end() - 2), batch);
  const int64_t batches = ir::num_elements(batch);
  std::vector<int64_t> index(batch.size(), 0);
  int64_t ba = 0, bb = 0;
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t bi = 0; bi < batches; ++bi) {
    const float* A = lhs.data + ba * m * k;
    const float* B = rhs.data + bb * k * n;
    float* C = a.out + bi * m * n;
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t p = 0; p < k; ++p) {
        const double aip = A[i * k + p];
        for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] += aip * B[p * n + j];
      }
      for (int64_t j = 0; j < n; ++j)
        C[i * n + j] = static_cast<float>(row[static_cast<size_t>(j)]);
    }
    for (size_t d = batch.size(); d-- > 0;) {
      ba += sa[d];
      bb += sb[d];
      if (++index[d] < batch[d]) break;
      ba -= sa[d] * batch[d];
      bb -= sb[d] * batch[d];
      index[d] = 0;
    }
  }
}

}  // namespace cuvil::runtime::reference
