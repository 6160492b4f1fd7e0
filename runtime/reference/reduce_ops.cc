// Reductions over a set of axes, accumulated in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

void run_reduce(const OpArgs& a) {
  const View& x = a.in[0];
  const size_t rank = x.shape.size();
  std::vector<int64_t> axes = a.node.attrs.get_ints("axes", {});
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  std::vector<char> reduced(rank, 0);
  for (int64_t axis : axes) reduced[static_cast<size_t>(normalize_axis(axis, rank))] = 1;
  // Output strides over the input's index space: 0 on reduced axes.
  ir::Shape kept;
  for (size_t d = 0; d < rank; ++d) kept.push_back(reduced[d] ? 1 : x.shape[d]);
  const std::vector<int64_t> out_strides = strides_of(kept);
  const int64_t out_n = ir::num_elements(kept);
  const bool is_max = a.node.op == ir::OpKind::reduce_max;
  std::vector<double> acc(static_cast<size_t>(out_n),
                          is_max ? -std::numeric_limits<double>::infinity() : 0.0);
  const int64_t n = x.numel();
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < rank; ++d) o += reduced[d] ? 0 : index[d] * out_strides[d];
    const double v = x.data[i];
    double& slot = acc[static_cast<size_t>(o)];
    slot = is_max ? (std::isnan(v) || v > slot ? v : slot) : slot + v;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < x.shape[d]) break;
      index[d] = 0;
    }
  }
  const double count = out_n > 0 ? static_cast<double>(n) / static_cast<double>(out_n) : 1.0;
  for (int64_t o = 0; o < out_n; ++o) {
    const double v = acc[static_cast<size_t>(o)];
    a.out[o] = static_cast<float>(a.node.op == ir::OpKind::reduce_mean ? v / count : v);
  }
}

// Running sums along one axis, in double, in index order or from the end.
void run_cumsum(const OpArgs& a) {
  const View& x = a.in[0];
  const size_t rank = x.shape.size();
  const size_t axis = static_cast<size_t>(normalize_axis(a.node.attrs.get_int("axis", 0), rank));
  const bool exclusive = a.node.attrs.get_int("exclusive", 0) != 0;
  const bool reverse = a.node.attrs.get_int("reverse", 0) != 0;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (size_t d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  const int64_t len = x.shape[axis];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k) {
      double sum = 0.0;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t i = reverse ? len - 1 - step : step;
        const int64_t at = (o * len + i) * inner + k;
        const double v = x.data[at];
        if (!exclusive) sum += v;
        a.out[at] = static_cast<float>(sum);
        if (exclusive) sum += v;
      }
    }
  }
}

}  // namespace cuvil::runtime::reference
