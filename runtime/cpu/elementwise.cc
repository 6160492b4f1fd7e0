// Elementwise unary and broadcasting binary ops, casts, and rotary embeddings.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/elementwise_math.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {
// Blocks small enough to keep a block in L1/L2 through the op and its epilogue.
constexpr int64_t kBlock = 8192;

template <class F>
void for_blocks(ThreadPool& pool, int64_t total, F f) {
  const int64_t blocks = (total + kBlock - 1) / kBlock;
  pool.parallel_for(blocks, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t begin = b * kBlock;
      f(begin, std::min(kBlock, total - begin));
    }
  });
}
}  // namespace

std::shared_ptr<const void> unary_prepare(const Step& step, const float* const*) {
  return std::make_shared<ir::UnaryParams>(ir::unary_params(step.op, step.attrs));
}

void unary(const KernelArgs& a) {
  const Epilogue epi(a.step, a.in, a.out);
  const ir::UnaryParams params = a.step.prepared
                                     ? *static_cast<const ir::UnaryParams*>(a.step.prepared.get())
                                     : ir::unary_params(a.step.op, a.step.attrs);
  for_blocks(a.pool, ir::num_elements(a.step.output_shape), [&](int64_t begin, int64_t n) {
    unary_run(a.step.op, a.in[0] + begin, a.out + begin, n, params);
    if (!epi.empty()) epi.apply(a.out + begin, n);
  });
}

namespace {
struct CastSchedule {
  bool to_integer = false;
};
}  // namespace

std::shared_ptr<const void> cast_schedule(const Step& step) {
  return std::make_shared<CastSchedule>(
      CastSchedule{step.attrs.get_string("dtype", "f32") == "i32"});
}

void cast(const KernelArgs& a) {
  const bool to_integer = schedule_of<CastSchedule>(a.step).to_integer;
  for_blocks(a.pool, ir::num_elements(a.step.output_shape), [&](int64_t begin, int64_t n) {
    const float* x = a.in[0] + begin;
    float* y = a.out + begin;
    if (to_integer) {
      for (int64_t i = 0; i < n; ++i) y[i] = ir::truncate_to_i32(x[i]);
    } else if (y != x) {
      std::copy(x, x + n, y);
    }
  });
}

void binary(const KernelArgs& a) {
  const Epilogue epi(a.step, a.in, a.out);
  const Broadcast lhs(a.step.input_shapes[0], a.step.output_shape);
  const Broadcast rhs(a.step.input_shapes[1], a.step.output_shape);
  const float* x = a.in[0];
  const float* y = a.in[1];
  const ir::OpKind op = a.step.op;
  for_blocks(a.pool, ir::num_elements(a.step.output_shape), [&](int64_t begin, int64_t n) {
    const float* left = x + begin;
    if (!lhs.identity()) {
      // Materialise the broadcast left operand, then combine in place.
      lhs.for_each_run(begin, n, [&](int64_t pos, int64_t off, int64_t stride, int64_t len) {
        float* o = a.out + pos;
        if (stride == 0) {
          std::fill(o, o + len, x[off]);
        } else {
          std::copy(x + off, x + off + len, o);
        }
      });
      left = a.out + begin;
    }
    rhs.for_each_run(begin, n, [&](int64_t pos, int64_t off, int64_t stride, int64_t len) {
      binary_run(op, left + (pos - begin), y + off, stride, a.out + pos, len);
    });
    if (!epi.empty()) epi.apply(a.out + begin, n);
  });
}

namespace {
// Rope's position offset and its per-pair frequencies theta^(-2i/d), computed once at lowering.
struct RopeSchedule {
  int64_t pos0 = 0;
  std::vector<double> freq;  // [d / 2]
};
}  // namespace

std::shared_ptr<const void> rope_schedule(const Step& step) {
  auto s = std::make_shared<RopeSchedule>();
  const int64_t d = step.input_shapes.at(0).at(3);
  const double theta = step.attrs.get_float("theta", 10000.0);
  s->pos0 = step.attrs.get_int("pos_offset", 0);
  for (int64_t i = 0; i < d / 2; ++i)
    s->freq.push_back(std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d)));
  return s;
}

void rope(const KernelArgs& a) {
  const ir::Shape& s = a.step.input_shapes[0];
  const int64_t bh = s[0] * s[1], seq = s[2], d = s[3], half = d / 2;
  const RopeSchedule& sc = schedule_of<RopeSchedule>(a.step);
  const int64_t pos0 = sc.pos0;
  const double* freq = sc.freq.data();
  const Epilogue epi(a.step, a.in, a.out);
  // Parallel over positions: each position's angles are computed once for all heads.
  a.pool.parallel_for_tid(seq, [&](int tid, int64_t s0, int64_t s1) {
    float* cs = a.pool.scratch(tid, ThreadPool::kKernel, static_cast<size_t>(2 * half));
    float* sn = cs + half;
    for (int64_t p = s0; p < s1; ++p) {
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(pos0 + p) * freq[i];
        cs[i] = static_cast<float>(std::cos(angle));
        sn[i] = static_cast<float>(std::sin(angle));
      }
      for (int64_t h = 0; h < bh; ++h) {
        const float* x = a.in[0] + (h * seq + p) * d;
        float* y = a.out + (h * seq + p) * d;
        for (int64_t i = 0; i < half; ++i) {
          const float x0 = x[i], x1 = x[i + half];
          y[i] = x0 * cs[i] - x1 * sn[i];
          y[i + half] = x1 * cs[i] + x0 * sn[i];
        }
        if (!epi.empty()) epi.apply(y, d);
      }
    }
  });
}

}  // namespace cuvil::runtime::cpu
