// Numpy broadcasting of an operand against a result shape, collapsed so that common cases
// (same shape, per-channel, per-row, scalar) become one or two long runs. No allocation.
#pragma once

#include <algorithm>
#include <cstdint>

#include "passes/ir/types.h"

namespace cuvil::runtime::cpu {

class Broadcast {
 public:
  static constexpr int kMaxRank = 8;

  Broadcast() = default;
  // `operand` must broadcast to `out` (checked by shape inference).
  Broadcast(const ir::Shape& operand, const ir::Shape& out);

  // Covers result elements [flat, flat + len) with runs: f(out_pos, src_offset, src_stride, n)
  // where result elements out_pos .. out_pos+n-1 read operand elements src_offset + i*src_stride
  // and src_stride is 0 (broadcast) or 1 (contiguous).
  template <class F>
  void for_each_run(int64_t flat, int64_t len, F&& f) const {
    const int64_t end = flat + len;
    const int64_t inner = dims_[rank_ - 1];
    const int64_t inner_stride = strides_[rank_ - 1];
    while (flat < end) {
      int64_t rem = flat, off = 0;
      for (int d = rank_ - 1; d >= 0; --d) {
        off += (rem % dims_[d]) * strides_[d];
        rem /= dims_[d];
      }
      const int64_t n = std::min(end - flat, inner - flat % inner);
      f(flat, off, inner_stride, n);
      flat += n;
    }
  }
  // True when operand element i is result element i.
  bool identity() const { return rank_ == 1 && strides_[0] == 1; }
  // Where the operand of result element i lies, for a result whose last dim is `columns`: at i
  // (same shape), at i % columns (one value per column), at 0 (a scalar), or none of these.
  enum class Pattern { element, column, scalar, other };
  Pattern pattern(int64_t columns) const {
    if (identity()) return Pattern::element;
    if (rank_ == 1 && strides_[0] == 0) return Pattern::scalar;
    if (rank_ == 2 && strides_[0] == 0 && strides_[1] == 1 && dims_[1] == columns) {
      return Pattern::column;
    }
    return Pattern::other;
  }

 private:
  int rank_ = 1;
  int64_t dims_[kMaxRank] = {1};
  int64_t strides_[kMaxRank] = {0};
};

}  // namespace cuvil::runtime::cpu
