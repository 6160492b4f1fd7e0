// Copies: concat, slice, reshape, transpose (collapsed; blocked 2-D tiles for batched matrix
// transposes such as the NCHW <-> NHWC perms, a few rows interleaved for an image's channels),
// embedding gathers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/kernels.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

int64_t norm_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

// What concat, slice and transpose read of their step's attributes, once at lowering.
struct CopySchedule {
  int64_t axis = 0;           // concat, slice: normalised to [0, rank)
  int64_t start = 0;          // slice
  std::vector<int64_t> perm;  // transpose
};

void copy_floats(float* dst, const float* src, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void finish(const KernelArgs& a) {
  Epilogue(a.step, a.in, a.out).apply_all(a.pool);
}

}  // namespace

std::shared_ptr<const void> copy_schedule(const Step& step) {
  auto s = std::make_shared<CopySchedule>();
  s->axis = norm_axis(step.attrs.get_int("axis", 0), step.output_shape.size());
  s->start = step.attrs.get_int("start", 0);
  s->perm = step.attrs.get_ints("perm", {});
  return s;
}

void concat(const KernelArgs& a) {
  const ir::Shape& os = a.step.output_shape;
  const int64_t axis = schedule_of<CopySchedule>(a.step).axis;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= os[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < os.size(); ++i) inner *= os[i];
  const int64_t out_row = os[static_cast<size_t>(axis)] * inner;
  const size_t count = op_input_count(a.step);
  a.pool.parallel_for(outer, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t at = 0;
      for (size_t i = 0; i < count; ++i) {
        const int64_t chunk = a.step.input_shapes[i][static_cast<size_t>(axis)] * inner;
        copy_floats(a.out + o * out_row + at, a.in[i] + o * chunk, chunk);
        at += chunk;
      }
    }
  });
  finish(a);
}

void slice(const KernelArgs& a) {
  const ir::Shape& is = a.step.input_shapes[0];
  const CopySchedule& sc = schedule_of<CopySchedule>(a.step);
  const int64_t axis = sc.axis;
  const int64_t dim = is[static_cast<size_t>(axis)];
  const int64_t start = sc.start;
  const int64_t len = a.step.output_shape[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= is[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < is.size(); ++i) inner *= is[i];
  a.pool.parallel_for(outer, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      copy_floats(a.out + o * len * inner, a.in[0] + (o * dim + start) * inner, len * inner);
    }
  });
  finish(a);
}

void reshape(const KernelArgs& a) {
  const int64_t n = ir::num_elements(a.step.output_shape);
  constexpr int64_t kBlock = int64_t{1} << 16;
  a.pool.parallel_for((n + kBlock - 1) / kBlock, [&](int64_t b0, int64_t b1) {
    const int64_t begin = b0 * kBlock, end = std::min(n, b1 * kBlock);
    if (a.out != a.in[0]) copy_floats(a.out + begin, a.in[0] + begin, end - begin);
  });
  finish(a);
}

namespace {

// Transposes with at most this many input rows take interleave_rows.
constexpr int64_t kFewRows = 4;

template <int R>
void interleave(const float* in, int64_t cols, int64_t c0, int64_t c1, float* out) {
  for (int64_t c = c0; c < c1; ++c) {
    for (int r = 0; r < R; ++r) out[c * R + r] = in[r * cols + c];
  }
}

// out[c][r] = in[r][c] for columns [c0, c1) of `rows` (2..kFewRows) rows.
static_assert(kFewRows == 4, "interleave_rows has a case per row count up to kFewRows");
void interleave_rows(int rows, const float* in, int64_t cols, int64_t c0, int64_t c1, float* out) {
  switch (rows) {
    case 2:
      return interleave<2>(in, cols, c0, c1, out);
    case 3:
      return interleave<3>(in, cols, c0, c1, out);
    default:
      CUVIL_CHECK(rows == 4, "interleave_rows: " + std::to_string(rows) + " rows");
      return interleave<4>(in, cols, c0, c1, out);
  }
}

}  // namespace

void transpose(const KernelArgs& a) {
  const ir::Shape& is = a.step.input_shapes[0];
  const std::vector<int64_t>& perm_attr = schedule_of<CopySchedule>(a.step).perm;
  constexpr int kMax = 16;
  CUVIL_CHECK(is.size() <= kMax, "transpose: rank too large");
  // Drop unit input dims, then merge output neighbours that are input neighbours too.
  int64_t keep[kMax];  // old input axis -> new index, or -1
  int64_t in_dims[kMax];
  int rank = 0;
  for (size_t i = 0; i < is.size(); ++i) {
    keep[i] = is[i] == 1 ? -1 : rank;
    if (is[i] != 1) in_dims[rank++] = is[i];
  }
  int64_t perm[kMax];
  int pr = 0;
  for (int64_t p : perm_attr) {
    if (keep[p] >= 0) perm[pr++] = keep[p];
  }
  // Groups of output positions whose input axes are consecutive.
  int64_t g_first[kMax], g_last[kMax];
  int groups = 0;
  for (int i = 0; i < pr; ++i) {
    if (groups > 0 && perm[i] == g_last[groups - 1] + 1) {
      g_last[groups - 1] = perm[i];
    } else {
      g_first[groups] = g_last[groups] = perm[i];
      ++groups;
    }
  }
  // Collapsed input dims in input order, and the permutation over them.
  int64_t order[kMax];  // groups sorted by their first input axis
  for (int g = 0; g < groups; ++g) order[g] = g;
  std::sort(order, order + groups, [&](int64_t x, int64_t y) { return g_first[x] < g_first[y]; });
  int64_t cdim[kMax], cstride[kMax], cperm[kMax], where[kMax];
  for (int j = 0; j < groups; ++j) where[order[j]] = j;
  for (int j = 0; j < groups; ++j) {
    const int64_t g = order[j];
    cdim[j] = 1;
    for (int64_t ax = g_first[g]; ax <= g_last[g]; ++ax) cdim[j] *= in_dims[ax];
  }
  int64_t st = 1;
  for (int j = groups - 1; j >= 0; --j) {
    cstride[j] = st;
    st *= cdim[j];
  }
  for (int g = 0; g < groups; ++g) cperm[g] = where[g];

  const float* in = a.in[0];
  float* out = a.out;
  const int64_t total = ir::num_elements(is);
  if (groups <= 1) {
    copy_floats(out, in, total);
  } else if (groups == 3 && cperm[0] == 0 && cperm[1] == 2 && cperm[2] == 1) {
    // Batched matrix transpose [b, r, c] -> [b, c, r] in 32 x 32 tiles.
    const int64_t rows = cdim[1], cols = cdim[2];
    constexpr int64_t kT = 32;
    const int64_t tr = (rows + kT - 1) / kT, tc = (cols + kT - 1) / kT;
    a.pool.parallel_for(cdim[0] * tr * tc, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / (tr * tc), r0 = (t / tc) % tr * kT, c0 = t % tc * kT;
        const float* src = in + b * rows * cols;
        float* dst = out + b * rows * cols;
        const int64_t r1 = std::min(rows, r0 + kT), c1 = std::min(cols, c0 + kT);
        for (int64_t c = c0; c < c1; ++c) {
          for (int64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
        }
      }
    });
  } else if (groups == 2 && cdim[0] <= kFewRows) {
    // A few long rows interleaved (an image's channels, NCHW -> NHWC): per column chunk, each
    // output pixel's values from the rows' streams; the row count a constant, so the loop
    // vectorises into permutes.
    const int64_t rows = cdim[0], cols = cdim[1];
    constexpr int64_t kChunk = 2048;
    a.pool.parallel_for((cols + kChunk - 1) / kChunk, [&](int64_t t0, int64_t t1) {
      interleave_rows(static_cast<int>(rows), in, cols, t0 * kChunk, std::min(cols, t1 * kChunk),
                      out);
    });
  } else if (groups == 2) {
    // Plain matrix transpose: treat as one batch.
    const int64_t rows = cdim[0], cols = cdim[1];
    constexpr int64_t kT = 32;
    const int64_t tr = (rows + kT - 1) / kT, tc = (cols + kT - 1) / kT;
    a.pool.parallel_for(tr * tc, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t r0 = t / tc * kT, c0 = t % tc * kT;
        const int64_t r1 = std::min(rows, r0 + kT), c1 = std::min(cols, c0 + kT);
        for (int64_t c = c0; c < c1; ++c) {
          for (int64_t r = r0; r < r1; ++r) out[c * rows + r] = in[r * cols + c];
        }
      }
    });
  } else {
    // General: output rows (all but the last output dim), strided reads along it.
    int64_t odim[kMax], ostr[kMax];
    for (int i = 0; i < groups; ++i) {
      odim[i] = cdim[cperm[i]];
      ostr[i] = cstride[cperm[i]];
    }
    const int64_t last = odim[groups - 1], last_stride = ostr[groups - 1];
    a.pool.parallel_for(total / last, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t rem = r, off = 0;
        for (int i = groups - 2; i >= 0; --i) {
          off += (rem % odim[i]) * ostr[i];
          rem /= odim[i];
        }
        float* dst = out + r * last;
        if (last_stride == 1) {
          copy_floats(dst, in + off, last);
        } else {
          for (int64_t j = 0; j < last; ++j) dst[j] = in[off + j * last_stride];
        }
      }
    });
  }
  finish(a);
}

void embedding(const KernelArgs& a) {
  const int64_t vocab = a.step.input_shapes[0][0], dim = a.step.input_shapes[0][1];
  const int64_t count = ir::num_elements(a.step.input_shapes[1]);
  const float* ids = a.in[1];
  for (int64_t i = 0; i < count; ++i) {
    const float id = ids[i];
    if (!(id >= 0 && id < static_cast<float>(vocab)) || id != std::floor(id)) {
      throw UserError("embedding '" + a.step.node_name + "': id " + std::to_string(id) +
                      " at position " + std::to_string(i) + " is not in [0, " +
                      std::to_string(vocab) + ")");
    }
  }
  a.pool.parallel_for(count, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      copy_floats(a.out + i * dim, a.in[0] + static_cast<int64_t>(ids[i]) * dim, dim);
    }
  });
  finish(a);
}

}  // namespace cuvil::runtime::cpu
