// Data movement: concat, slice, reshape, transpose, pad, expand, the gathers and scatter.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/index_check.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

namespace {

// Elements before and after `axis` (the tensor is viewed as [outer, shape[axis], inner]).
int64_t outer_size(const ir::Shape& shape, size_t axis) {
  return ir::num_elements(ir::Shape(shape.begin(), shape.begin() + static_cast<int64_t>(axis)));
}
int64_t inner_size(const ir::Shape& shape, size_t axis) {
  return ir::num_elements(ir::Shape(shape.begin() + static_cast<int64_t>(axis) + 1, shape.end()));
}

}  // namespace

void run_concat(const OpArgs& a) {
  const size_t axis =
      static_cast<size_t>(normalize_axis(a.node.attrs.get_int("axis", 0), a.out_shape.size()));
  const int64_t outer = outer_size(a.out_shape, axis);
  const int64_t inner = inner_size(a.out_shape, axis);
  const int64_t out_row = a.out_shape[axis] * inner;
  int64_t column = 0;  // where the current input starts inside each output row
  for (const View& in : a.in) {
    const int64_t in_row = in.shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      std::copy_n(in.data + o * in_row, in_row, a.out + o * out_row + column);
    }
    column += in_row;
  }
}

void run_slice(const OpArgs& a) {
  const View& x = a.in[0];
  const size_t axis =
      static_cast<size_t>(normalize_axis(a.node.attrs.get_int("axis", 0), x.shape.size()));
  const int64_t start = a.node.attrs.get_int("start", 0);
  const int64_t outer = outer_size(x.shape, axis);
  const int64_t inner = inner_size(x.shape, axis);
  const int64_t in_row = x.shape[axis] * inner;
  const int64_t out_row = a.out_shape[axis] * inner;
  for (int64_t o = 0; o < outer; ++o) {
    std::copy_n(x.data + o * in_row + start * inner, out_row, a.out + o * out_row);
  }
}

void run_reshape(const OpArgs& a) {
  std::copy_n(a.in[0].data, a.in[0].numel(), a.out);
}

// out[i_0, ..., i_r] = x[j] where x's index along dimension perm[d] is i_d.
void run_transpose(const OpArgs& a) {
  const View& x = a.in[0];
  const auto perm = a.node.attrs.get_ints("perm", {});
  const std::vector<int64_t> in_strides = strides_of(x.shape);
  const size_t rank = a.out_shape.size();
  std::vector<int64_t> step(rank);
  for (size_t d = 0; d < rank; ++d) step[d] = in_strides[static_cast<size_t>(perm[d])];
  const int64_t n = x.numel();
  std::vector<int64_t> index(rank, 0);
  int64_t src = 0;
  for (int64_t i = 0; i < n; ++i) {
    a.out[i] = x.data[src];
    for (size_t d = rank; d-- > 0;) {
      src += step[d];
      if (++index[d] < a.out_shape[d]) break;
      src -= step[d] * a.out_shape[d];
      index[d] = 0;
    }
  }
}

// inputs (table[V, D], ids[...]) -> [..., D]; ids are exact integers stored as floats.
void run_embedding(const OpArgs& a) {
  const View& table = a.in[0];
  const View& ids = a.in[1];
  const int64_t vocab = table.shape[0], dim = table.shape[1];
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const float id = ids.data[i];
    if (!(id >= 0.0f && id < static_cast<float>(vocab)) || id != std::floor(id)) {
      throw UserError("node '" + a.node.name + "' (embedding): id " + std::to_string(id) +
                      " at position " + std::to_string(i) + " is not an integer in [0, " +
                      std::to_string(vocab) + ")");
    }
    std::copy_n(table.data + static_cast<int64_t>(id) * dim, dim, a.out + i * dim);
  }
}

// Each output element reads the input at its index minus the begin pad, mapped back inside the
// axis by the mode (constant: outside reads `value`).
void run_pad(const OpArgs& a) {
  const View& x = a.in[0];
  const size_t rank = x.shape.size();
  const auto pads = a.node.attrs.get_ints("pads", {});
  const std::string mode = a.node.attrs.get_string("mode", "constant");
  const float value = static_cast<float>(a.node.attrs.get_float("value", 0.0));
  const std::vector<int64_t> strides = strides_of(x.shape);
  const int64_t n = ir::num_elements(a.out_shape);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      int64_t j = index[d] - pads[d];
      const int64_t size = x.shape[d];
      if (j < 0 || j >= size) {
        if (mode == "constant") {
          inside = false;
          break;
        }
        if (mode == "edge") {
          j = j < 0 ? 0 : size - 1;
        } else {  // reflect, without repeating the edge: -1 -> 1, size -> size - 2
          j = j < 0 ? -j : 2 * (size - 1) - j;
        }
      }
      src += j * strides[d];
    }
    a.out[i] = inside ? x.data[src] : value;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < a.out_shape[d]) break;
      index[d] = 0;
    }
  }
}

void run_gather(const OpArgs& a) {
  const View& data = a.in[0];
  const View& idx = a.in[1];
  const size_t axis =
      static_cast<size_t>(normalize_axis(a.node.attrs.get_int("axis", 0), data.shape.size()));
  const int64_t outer = outer_size(data.shape, axis);
  const int64_t inner = inner_size(data.shape, axis);
  const int64_t size = data.shape[axis];
  const int64_t count = idx.numel();
  for (int64_t k = 0; k < count; ++k) {
    const int64_t j = checked_index(idx.data[k], size, k, a.node.name, "gather");
    for (int64_t o = 0; o < outer; ++o) {
      std::copy_n(data.data + (o * size + j) * inner, inner, a.out + (o * count + k) * inner);
    }
  }
}

// Every index is checked before anything is written; then each update in index order.
void run_scatter(const OpArgs& a) {
  const View& data = a.in[0];
  const View& idx = a.in[1];
  const View& updates = a.in[2];
  const size_t axis =
      static_cast<size_t>(normalize_axis(a.node.attrs.get_int("axis", 0), data.shape.size()));
  const ir::ScatterReduction reduction = ir::scatter_reduction(a.node.attrs);
  const int64_t outer = outer_size(data.shape, axis);
  const int64_t inner = inner_size(data.shape, axis);
  const int64_t size = data.shape[axis];
  const int64_t count = idx.numel();
  std::vector<int64_t> at(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k)
    at[static_cast<size_t>(k)] = checked_index(idx.data[k], size, k, a.node.name, "scatter");
  std::copy_n(data.data, data.numel(), a.out);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        float& y = a.out[(o * size + at[static_cast<size_t>(k)]) * inner + i];
        y = ir::scatter_combine(reduction, y, updates.data[(o * count + k) * inner + i]);
      }
    }
  }
}

void run_expand(const OpArgs& a) {
  const View& x = a.in[0];
  const std::vector<int64_t> sx = broadcast_strides(x.shape, a.out_shape);
  const size_t rank = a.out_shape.size();
  const int64_t n = ir::num_elements(a.out_shape);
  std::vector<int64_t> index(rank, 0);
  int64_t src = 0;
  for (int64_t i = 0; i < n; ++i) {
    a.out[i] = x.data[src];
    for (size_t d = rank; d-- > 0;) {
      src += sx[d];
      if (++index[d] < a.out_shape[d]) break;
      src -= sx[d] * a.out_shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace cuvil::runtime::reference
