// Normalisations and softmax. Statistics are accumulated in fp64 (two passes: mean, then the
// sum of squared deviations) so results stay within 1e-4 of an fp64 reference at any size.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/elementwise_math.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/kernels.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

// y[c] = x[c] * mul[c] + add[c] over rows of `c` channels (NHWC) or y = x * mul + add over
// planes of `hw` pixels (NCHW), then the epilogue; parallel over rows / planes.
void channel_affine(const KernelArgs& a, bool nhwc, const Dims4& d, const float* mul,
                    const float* add, int64_t mul_stride_n) {
  const Epilogue epi(a.step, a.in, a.out);
  const float* x = a.in[0];
  const int64_t hw = d.h * d.w;
  if (nhwc) {
    a.pool.parallel_for(d.n * hw, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t img = r / hw;
        const float* m = mul + img * mul_stride_n;
        const float* ad = add + img * mul_stride_n;
        const float* xr = x + r * d.c;
        float* yr = a.out + r * d.c;
        for (int64_t c = 0; c < d.c; ++c) yr[c] = xr[c] * m[c] + ad[c];
        if (!epi.empty()) epi.apply(yr, d.c);
      }
    });
  } else {
    a.pool.parallel_for(d.n * d.c, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t img = p / d.c, c = p % d.c;
        const float m = mul[img * mul_stride_n + c], ad = add[img * mul_stride_n + c];
        const float* xp = x + p * hw;
        float* yp = a.out + p * hw;
        for (int64_t i = 0; i < hw; ++i) yp[i] = xp[i] * m + ad;
        if (!epi.empty()) epi.apply(yp, hw);
      }
    });
  }
}

}  // namespace

void batch_norm(const KernelArgs& a) {
  const bool nhwc = is_nhwc(a.step);
  const Dims4 d = dims4(a.step.input_shapes[0], nhwc);
  const double eps = a.step.attrs.get_float("eps", 1e-5);
  float* mul =
      a.pool.scratch(a.pool.current_thread(), ThreadPool::kKernel, static_cast<size_t>(2 * d.c));
  float* add = mul + d.c;
  for (int64_t c = 0; c < d.c; ++c) {
    const double m = a.in[1][c] / std::sqrt(static_cast<double>(a.in[4][c]) + eps);
    mul[c] = static_cast<float>(m);
    add[c] = static_cast<float>(a.in[2][c] - a.in[3][c] * m);
  }
  channel_affine(a, nhwc, d, mul, add, 0);
}

void group_norm(const KernelArgs& a) {
  const bool nhwc = is_nhwc(a.step);
  const Dims4 d = dims4(a.step.input_shapes[0], nhwc);
  const int64_t groups = a.step.attrs.get_int("groups", 32);
  const double eps = a.step.attrs.get_float("eps", 1e-5);
  const int64_t cg = d.c / groups, hw = d.h * d.w;
  const float* x = a.in[0];
  const float* gamma = a.in[1];
  const float* beta = a.in[2];
  // Per (image, channel) multiplier and offset, from per (image, group) statistics.
  float* mul = a.pool.scratch(a.pool.current_thread(), ThreadPool::kKernel2,
                              static_cast<size_t>(2 * d.n * d.c));
  float* add = mul + d.n * d.c;
  a.pool.parallel_for(d.n * groups, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t img = t / groups, g = t % groups;
      const double count = static_cast<double>(cg * hw);
      double sum = 0, ss = 0;
      if (nhwc) {
        const float* base = x + img * hw * d.c + g * cg;
        for (int64_t p = 0; p < hw; ++p) sum += sum_f64(base + p * d.c, cg);
        const double mean = sum / count;
        for (int64_t p = 0; p < hw; ++p) ss += sum_sq_dev_f64(base + p * d.c, cg, mean);
      } else {
        const float* base = x + (img * d.c + g * cg) * hw;
        sum = sum_f64(base, cg * hw);
        ss = sum_sq_dev_f64(base, cg * hw, sum / count);
      }
      const double mean = sum / count;
      const double rstd = 1.0 / std::sqrt(ss / count + eps);
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
        const double m = gamma[c] * rstd;
        mul[img * d.c + c] = static_cast<float>(m);
        add[img * d.c + c] = static_cast<float>(beta[c] - mean * m);
      }
    }
  });
  channel_affine(a, nhwc, d, mul, add, d.c);
}

namespace {
// Last-dim norms: rows of length dim; `rms` selects RMSNorm (no centring, no beta).
void row_norm(const KernelArgs& a, bool rms) {
  const int64_t dim = a.step.input_shapes[0].back();
  const int64_t rows = ir::num_elements(a.step.input_shapes[0]) / std::max<int64_t>(dim, 1);
  const double eps = a.step.attrs.get_float("eps", 1e-5);
  const float* gamma = a.in[1];
  const float* beta = rms ? nullptr : a.in[2];
  const Epilogue epi(a.step, a.in, a.out);
  a.pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = a.in[0] + r * dim;
      float* y = a.out + r * dim;
      if (rms) {
        const float s = static_cast<float>(1.0 / std::sqrt(sum_sq_f64(x, dim) / dim + eps));
        for (int64_t i = 0; i < dim; ++i) y[i] = x[i] * s * gamma[i];
      } else {
        const double mean = sum_f64(x, dim) / dim;
        const double rstd = 1.0 / std::sqrt(sum_sq_dev_f64(x, dim, mean) / dim + eps);
        const float m = static_cast<float>(mean), s = static_cast<float>(rstd);
        for (int64_t i = 0; i < dim; ++i) y[i] = (x[i] - m) * s * gamma[i] + beta[i];
      }
      if (!epi.empty()) epi.apply(y, dim);
    }
  });
}
}  // namespace

void layer_norm(const KernelArgs& a) {
  row_norm(a, false);
}
void rms_norm(const KernelArgs& a) {
  row_norm(a, true);
}

void softmax(const KernelArgs& a) {
  const ir::Shape& s = a.step.input_shapes[0];
  int64_t axis = a.step.attrs.get_int("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t len = s[static_cast<size_t>(axis)];
  const Epilogue epi(a.step, a.in, a.out);
  if (inner == 1) {
    a.pool.parallel_for(outer, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* x = a.in[0] + r * len;
        float* y = a.out + r * len;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < len; ++i) mx = std::max(mx, x[i]);
        const float inv = static_cast<float>(1.0 / exp_affine_sum(x, 1.0f, -mx, y, len));
        for (int64_t i = 0; i < len; ++i) y[i] *= inv;
        if (!epi.empty()) epi.apply(y, len);
      }
    });
    return;
  }
  // Strided axis: one (outer, inner) column at a time.
  a.pool.parallel_for(outer * inner, [&](int64_t c0, int64_t c1) {
    for (int64_t col = c0; col < c1; ++col) {
      const int64_t o = col / inner, i = col % inner;
      const float* x = a.in[0] + o * len * inner + i;
      float* y = a.out + o * len * inner + i;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, x[j * inner]);
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        y[j * inner] = std::exp(x[j * inner] - mx);
        sum += y[j * inner];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t j = 0; j < len; ++j) y[j * inner] *= inv;
    }
  });
  epi.apply_all(a.pool);
}

}  // namespace cuvil::runtime::cpu
