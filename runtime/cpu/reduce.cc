// Reductions (mean, sum, max) over a set of axes. The reduced axes are merged into one middle
// axis when they are adjacent (LayerNorm-style last-axis means, per-channel spatial means), so
// the work is [outer, reduced, inner] with contiguous inner runs; other axis sets take a generic
// strided walk.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

struct ReduceShape {
  std::vector<char> reduced;  // per input axis
  bool adjacent = true;       // the reduced axes form one block
  int64_t outer = 1, middle = 1, inner = 1;
};

// Read once at lowering (reduce_schedule): the work's shape follows from the axes and the shape.
ReduceShape reduce_shape(const Step& step) {
  const ir::Shape& x = step.input_shapes[0];
  const size_t rank = x.size();
  ReduceShape r;
  r.reduced.assign(rank, 0);
  std::vector<int64_t> axes = step.attrs.get_ints("axes", {});
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  for (int64_t a : axes)
    r.reduced[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(rank) : a)] = 1;
  int first = -1, last = -1;
  for (size_t d = 0; d < rank; ++d) {
    if (!r.reduced[d]) continue;
    if (first < 0) first = static_cast<int>(d);
    last = static_cast<int>(d);
  }
  for (int d = first; d >= 0 && d <= last; ++d)
    r.adjacent = r.adjacent && r.reduced[static_cast<size_t>(d)];
  if (first < 0) {  // nothing reduced: a copy
    first = last = static_cast<int>(rank);
  }
  for (size_t d = 0; d < rank; ++d) {
    const int di = static_cast<int>(d);
    if (di < first)
      r.outer *= x[d];
    else if (di > last)
      r.inner *= x[d];
    else
      r.middle *= x[d];
  }
  return r;
}

}  // namespace

std::shared_ptr<const void> reduce_schedule(const Step& step) {
  return std::make_shared<ReduceShape>(reduce_shape(step));
}

void reduce(const KernelArgs& a) {
  const ReduceShape& r = schedule_of<ReduceShape>(a.step);
  const bool is_max = a.step.op == ir::OpKind::reduce_max;
  const bool is_mean = a.step.op == ir::OpKind::reduce_mean;
  const float* x = a.in[0];
  if (r.adjacent) {
    const double scale = is_mean && r.middle > 0 ? 1.0 / static_cast<double>(r.middle) : 1.0;
    a.pool.parallel_for(r.outer, [&](int64_t o0, int64_t o1) {
      std::vector<double> acc(static_cast<size_t>(r.inner));
      for (int64_t o = o0; o < o1; ++o) {
        std::fill(acc.begin(), acc.end(), is_max ? -std::numeric_limits<double>::infinity() : 0.0);
        const float* base = x + o * r.middle * r.inner;
        for (int64_t m = 0; m < r.middle; ++m) {
          const float* row = base + m * r.inner;
          if (is_max) {
            for (int64_t i = 0; i < r.inner; ++i) {
              const double v = row[i];
              if (std::isnan(v) || v > acc[static_cast<size_t>(i)]) acc[static_cast<size_t>(i)] = v;
            }
          } else {
            for (int64_t i = 0; i < r.inner; ++i) acc[static_cast<size_t>(i)] += row[i];
          }
        }
        float* out = a.out + o * r.inner;
        for (int64_t i = 0; i < r.inner; ++i)
          out[i] = static_cast<float>(acc[static_cast<size_t>(i)] * scale);
      }
    });
  } else {
    // Generic: every input element adds into its output slot (serial; rare axis sets).
    const ir::Shape& s = a.step.input_shapes[0];
    const size_t rank = s.size();
    std::vector<int64_t> out_stride(rank, 0);
    int64_t stride = 1, out_n = 1;
    for (size_t d = rank; d-- > 0;) {
      if (!r.reduced[d]) {
        out_stride[d] = stride;
        stride *= s[d];
      }
    }
    out_n = stride;
    std::vector<double> acc(static_cast<size_t>(out_n),
                            is_max ? -std::numeric_limits<double>::infinity() : 0.0);
    const int64_t n = ir::num_elements(s);
    std::vector<int64_t> index(rank, 0);
    int64_t o = 0;
    for (int64_t i = 0; i < n; ++i) {
      double& slot = acc[static_cast<size_t>(o)];
      const double v = x[i];
      slot = is_max ? (std::isnan(v) || v > slot ? v : slot) : slot + v;
      for (size_t d = rank; d-- > 0;) {
        o += out_stride[d];
        if (++index[d] < s[d]) break;
        o -= out_stride[d] * s[d];
        index[d] = 0;
      }
    }
    const double scale =
        is_mean && out_n > 0 ? static_cast<double>(out_n) / static_cast<double>(n) : 1.0;
    for (int64_t k = 0; k < out_n; ++k)
      a.out[k] = static_cast<float>(acc[static_cast<size_t>(k)] * scale);
  }
  Epilogue(a.step, a.in, a.out).apply_all(a.pool);
}

namespace {

// cumsum's axis and direction, read once at lowering; the tensor as [outer, len, inner].
struct CumsumSchedule {
  int64_t outer = 1, len = 1, inner = 1;
  bool exclusive = false, reverse = false;
};

}  // namespace

std::shared_ptr<const void> cumsum_schedule(const Step& step) {
  auto s = std::make_shared<CumsumSchedule>();
  const ir::Shape& x = step.input_shapes[0];
  int64_t axis = step.attrs.get_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d) {
    const int64_t e = x[static_cast<size_t>(d)];
    (d < axis ? s->outer : d == axis ? s->len : s->inner) *= e;
  }
  s->exclusive = step.attrs.get_int("exclusive", 0) != 0;
  s->reverse = step.attrs.get_int("reverse", 0) != 0;
  return s;
}

// Each thread takes whole rows of `outer`; the inner lanes of a row are summed side by side in
// double (the reference's order per lane, so the bits match it).
void cumsum(const KernelArgs& a) {
  const CumsumSchedule& s = schedule_of<CumsumSchedule>(a.step);
  const float* x = a.in[0];
  a.pool.parallel_for(s.outer, [&](int64_t o0, int64_t o1) {
    std::vector<double> sum(static_cast<size_t>(s.inner));
    for (int64_t o = o0; o < o1; ++o) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t step = 0; step < s.len; ++step) {
        const int64_t i = s.reverse ? s.len - 1 - step : step;
        const int64_t row = (o * s.len + i) * s.inner;
        for (int64_t k = 0; k < s.inner; ++k) {
          const double v = x[row + k];
          double& acc = sum[static_cast<size_t>(k)];
          if (!s.exclusive) acc += v;
          a.out[row + k] = static_cast<float>(acc);
          if (s.exclusive) acc += v;
        }
      }
    }
  });
  Epilogue(a.step, a.in, a.out).apply_all(a.pool);
}

}  // namespace cuvil::runtime::cpu
