// Index-mapping copies: pad (constant, reflect, edge), gather and scatter along an axis,
// numpy-broadcast expand, the broadcasting select (where) and comparison (compare). Each copies
// contiguous runs where it can.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/index_check.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

enum class PadMode { constant, edge, reflect };

// What pad and gather read of their step's attributes, once at lowering.
struct IndexingSchedule {
  std::vector<int64_t> pads;  // pad: [lo..., hi...]
  PadMode mode = PadMode::constant;
  float value = 0.0f;
  int64_t axis = 0;  // gather, scatter: normalised to [0, rank)
  ir::CompareMode compare = ir::CompareMode::equal;
  ir::ScatterReduction reduction = ir::ScatterReduction::none;
};

}  // namespace

std::shared_ptr<const void> indexing_schedule(const Step& step) {
  auto s = std::make_shared<IndexingSchedule>();
  s->pads = step.attrs.get_ints("pads", {});
  const std::string mode = step.attrs.get_string("mode", "constant");
  s->mode = mode == "constant" ? PadMode::constant
            : mode == "edge"   ? PadMode::edge
                               : PadMode::reflect;
  s->value = static_cast<float>(step.attrs.get_float("value", 0.0));
  if (step.op == ir::OpKind::compare) s->compare = ir::compare_mode(step.attrs);
  if (step.op == ir::OpKind::scatter) s->reduction = ir::scatter_reduction(step.attrs);
  s->axis = step.attrs.get_int("axis", 0);
  if (s->axis < 0 && !step.input_shapes.empty())
    s->axis += static_cast<int64_t>(step.input_shapes[0].size());
  return s;
}

namespace {

int64_t prod(const ir::Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

// Where output index j of an axis of `size` elements, padded by `lo` in front, reads from;
// -1 for a constant-mode read outside the input.
int64_t pad_source(int64_t j, int64_t lo, int64_t size, PadMode mode) {
  int64_t k = j - lo;
  if (k >= 0 && k < size) return k;
  if (mode == PadMode::constant) return -1;
  if (mode == PadMode::edge) return k < 0 ? 0 : size - 1;
  return k < 0 ? -k : 2 * (size - 1) - k;  // reflect
}

}  // namespace

// Rows along the last axis are copied whole (plus their pads); every other axis maps each output
// row to an input row or to the constant.
void pad(const KernelArgs& a) {
  const ir::Shape& in = a.step.input_shapes[0];
  const ir::Shape& out = a.step.output_shape;
  const size_t rank = in.size();
  const IndexingSchedule& sc = schedule_of<IndexingSchedule>(a.step);
  const std::vector<int64_t>& pads = sc.pads;
  const PadMode mode = sc.mode;
  const float value = sc.value;
  if (rank == 0) {
    a.out[0] = a.in[0][0];
    return;
  }
  const int64_t in_row = in[rank - 1], out_row = out[rank - 1];
  const int64_t lo_last = pads[rank - 1];
  const int64_t rows = prod(out, 0, rank - 1);
  a.pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> index(rank, 0);
    for (int64_t r = r0; r < r1; ++r) {
      // The output row's index on the leading axes, and the input row it reads.
      int64_t rem = r, src_row = 0, stride = 1;
      bool outside = false;
      for (size_t d = rank - 1; d-- > 0;) {
        const int64_t j = rem % out[d];
        rem /= out[d];
        const int64_t k = pad_source(j, pads[d], in[d], mode);
        if (k < 0) outside = true;
        src_row += std::max<int64_t>(k, 0) * stride;
        stride *= in[d];
      }
      float* dst = a.out + r * out_row;
      if (outside) {
        std::fill(dst, dst + out_row, value);
        continue;
      }
      const float* src = a.in[0] + src_row * in_row;
      for (int64_t j = 0; j < lo_last && j < out_row; ++j) {
        const int64_t k = pad_source(j, lo_last, in_row, mode);
        dst[j] = k < 0 ? value : src[k];
      }
      std::memcpy(dst + lo_last, src, static_cast<size_t>(in_row) * sizeof(float));
      for (int64_t j = lo_last + in_row; j < out_row; ++j) {
        const int64_t k = pad_source(j, lo_last, in_row, mode);
        dst[j] = k < 0 ? value : src[k];
      }
    }
  });
  Epilogue(a.step, a.in, a.out).apply_all(a.pool);
}

void gather(const KernelArgs& a) {
  const ir::Shape& data = a.step.input_shapes[0];
  const int64_t axis = schedule_of<IndexingSchedule>(a.step).axis;
  const size_t ax = static_cast<size_t>(axis);
  const int64_t outer = prod(data, 0, ax), size = data[ax], inner = prod(data, ax + 1, data.size());
  const int64_t count = ir::num_elements(a.step.input_shapes[1]);
  std::vector<int64_t> at(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k)
    at[static_cast<size_t>(k)] = checked_index(a.in[1][k], size, k, a.step.node_name, "gather");
  a.pool.parallel_for(outer * count, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / count, k = t % count;
      std::memcpy(a.out + t * inner, a.in[0] + (o * size + at[static_cast<size_t>(k)]) * inner,
                  static_cast<size_t>(inner) * sizeof(float));
    }
  });
  Epilogue(a.step, a.in, a.out).apply_all(a.pool);
}

namespace {
constexpr int64_t kScatterColumns = 4096;  // elements after the axis per parallel task
}  // namespace

// The data is copied, then each task owns one row before the axis and a run of columns after
// it and applies every update there in index order: updates to different tasks never meet, so
// the result is the sequential one on any number of threads.
void scatter(const KernelArgs& a) {
  const ir::Shape& data = a.step.input_shapes[0];
  const IndexingSchedule& s = schedule_of<IndexingSchedule>(a.step);
  const size_t ax = static_cast<size_t>(s.axis);
  const int64_t outer = prod(data, 0, ax), size = data[ax], inner = prod(data, ax + 1, data.size());
  const int64_t count = ir::num_elements(a.step.input_shapes[1]);
  std::vector<int64_t> at(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k)
    at[static_cast<size_t>(k)] = checked_index(a.in[1][k], size, k, a.step.node_name, "scatter");
  if (a.out != a.in[0]) {
    std::memcpy(a.out, a.in[0], static_cast<size_t>(ir::num_elements(data)) * sizeof(float));
  }
  const float* updates = a.in[2];
  const int64_t runs = (inner + kScatterColumns - 1) / kScatterColumns;
  a.pool.parallel_for(outer * runs, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / runs, i0 = (t % runs) * kScatterColumns;
      const int64_t n = std::min(kScatterColumns, inner - i0);
      for (int64_t k = 0; k < count; ++k) {
        float* y = a.out + (o * size + at[static_cast<size_t>(k)]) * inner + i0;
        const float* u = updates + (o * count + k) * inner + i0;
        if (s.reduction == ir::ScatterReduction::none) {
          std::memcpy(y, u, static_cast<size_t>(n) * sizeof(float));
        } else {
          for (int64_t i = 0; i < n; ++i) y[i] = ir::scatter_combine(s.reduction, y[i], u[i]);
        }
      }
    }
  });
}

namespace {

constexpr int64_t kBlock = 8192;  // elements per parallel task

// Blocks of the step's output shared between threads: f(begin, n) per block.
template <class F>
void for_output_blocks(const KernelArgs& a, F&& f) {
  const int64_t total = ir::num_elements(a.step.output_shape);
  a.pool.parallel_for((total + kBlock - 1) / kBlock, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) f(b * kBlock, std::min(kBlock, total - b * kBlock));
  });
}

// Operand k's element j of a run: base[j * step] (step 0 where it broadcasts, else 1).
struct RunOperand {
  const float* base;
  int64_t step;
  float operator[](int64_t j) const { return base[j * step]; }
};

// Runs of [begin, begin + n) in which each of the two operands steps by 0 or 1 (Broadcast
// collapses each one's axes): f(out_pos, len, first, second).
template <class F>
void for_each_joint_run(const Broadcast& p, const float* pd, const Broadcast& q, const float* qd,
                        int64_t begin, int64_t n, F&& f) {
  p.for_each_run(begin, n, [&](int64_t p0, int64_t po, int64_t ps, int64_t pn) {
    q.for_each_run(p0, pn, [&](int64_t q0, int64_t qo, int64_t qs, int64_t qn) {
      f(q0, qn, RunOperand{pd + po + (q0 - p0) * ps, ps}, RunOperand{qd + qo, qs});
    });
  });
}

}  // namespace

void expand(const KernelArgs& a) {
  const Broadcast bc(a.step.input_shapes[0], a.step.output_shape);
  const float* x = a.in[0];
  for_output_blocks(a, [&](int64_t begin, int64_t n) {
    bc.for_each_run(begin, n, [&](int64_t pos, int64_t off, int64_t stride, int64_t len) {
      float* o = a.out + pos;
      if (stride == 0) {
        std::fill(o, o + len, x[off]);
      } else {
        std::memcpy(o, x + off, static_cast<size_t>(len) * sizeof(float));
      }
    });
  });
  Epilogue(a.step, a.in, a.out).apply_all(a.pool);
}

void where(const KernelArgs& a) {
  const Broadcast cond(a.step.input_shapes[0], a.step.output_shape);
  const Broadcast x(a.step.input_shapes[1], a.step.output_shape);
  const Broadcast y(a.step.input_shapes[2], a.step.output_shape);
  for_output_blocks(a, [&](int64_t begin, int64_t n) {
    cond.for_each_run(begin, n, [&](int64_t c0, int64_t co, int64_t cs, int64_t cn) {
      for_each_joint_run(x, a.in[1], y, a.in[2], c0, cn,
                         [&](int64_t pos, int64_t len, RunOperand xv, RunOperand yv) {
                           const RunOperand c{a.in[0] + co + (pos - c0) * cs, cs};
                           float* out = a.out + pos;
                           if (c.step == 1 && xv.step == 1 && yv.step == 0) {  // mask and fill
                             const float fill = yv[0];
                             for (int64_t j = 0; j < len; ++j)
                               out[j] = c.base[j] != 0.0f ? xv.base[j] : fill;
                           } else {
                             for (int64_t j = 0; j < len; ++j)
                               out[j] = c[j] != 0.0f ? xv[j] : yv[j];
                           }
                         });
    });
  });
  Epilogue(a.step, a.in, a.out).apply_all(a.pool);
}

void compare(const KernelArgs& a) {
  const ir::CompareMode mode = schedule_of<IndexingSchedule>(a.step).compare;
  const Broadcast x(a.step.input_shapes[0], a.step.output_shape);
  const Broadcast y(a.step.input_shapes[1], a.step.output_shape);
  for_output_blocks(a, [&](int64_t begin, int64_t n) {
    for_each_joint_run(x, a.in[0], y, a.in[1], begin, n,
                       [&](int64_t pos, int64_t len, RunOperand xv, RunOperand yv) {
                         float* out = a.out + pos;
                         for (int64_t j = 0; j < len; ++j)
                           out[j] = ir::compare_holds(mode, xv[j], yv[j]) ? 1.0f : 0.0f;
                       });
  });
  Epilogue(a.step, a.in, a.out).apply_all(a.pool);
}

}  // namespace cuvil::runtime::cpu
