// Normalisations and softmax. Statistics are two-pass (mean, then the sum of squared deviations
// from it), accumulated in fp32 vector lanes over short chunks and in fp64 across chunks: as
// fast as plain fp32 sums and within 1e-4 of an fp64 reference at any size. NHWC GroupNorm sums
// per channel over pixels (contiguous, vectorised over channels) and combines channels per group.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/elementwise_math.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/norms_kernels.h"
#include "runtime/cpu/norms_row_loops.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

KernelIsa norms_isa() {
  return kernel_isa();
}

namespace {

// What the norms and softmax read of their step's attributes, once at lowering.
struct NormSchedule {
  bool nhwc = false;
  double eps = 1e-5;
  int64_t groups = 32;  // group_norm
  int64_t axis = -1;    // softmax: normalised to [0, rank)
};

// The portable row kernels (the reference of norms_avx512.cc's and norms_avx2.cc's): sum over x of
// f(x) in fp32 over chunks, fp64 across them.
template <class F>
double chunked_sum(const float* x, int64_t n, F f) {
  double total = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kNormSumChunk) {
    const int64_t len = std::min(kNormSumChunk, n - c0);
    const float* p = x + c0;
    float acc = 0;
    for (int64_t i = 0; i < len; ++i) acc += f(p[i]);
    total += acc;
  }
  return total;
}

double portable_sum(const float* x, int64_t n) {
  return chunked_sum(x, n, [](float v) { return v; });
}
double portable_sum_sq(const float* x, int64_t n) {
  return chunked_sum(x, n, [](float v) { return v * v; });
}
double portable_sum_sq_dev(const float* x, int64_t n, float mean) {
  return chunked_sum(x, n, [mean](float v) { return (v - mean) * (v - mean); });
}
float portable_row_max(const float* x, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  return mx;
}

constexpr NormRowKernels kPortable{portable_sum,     portable_sum_sq, portable_sum_sq_dev,
                                   portable_row_max, rms_row_loop,    layer_row_loop};

const NormRowKernels& row_kernels() {
  return set_for_isa(norms_isa(), norm_row_kernels_avx512(), norm_row_kernels_avx2(), kPortable);
}

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

std::shared_ptr<const void> norm_schedule(const Step& step) {
  auto s = std::make_shared<NormSchedule>();
  s->nhwc = is_nhwc(step);
  s->eps = step.attrs.get_float("eps", 1e-5);
  s->groups = step.attrs.get_int("groups", 32);
  s->axis = step.attrs.get_int("axis", -1);
  if (s->axis < 0) s->axis += static_cast<int64_t>(step.input_shapes.at(0).size());
  return s;
}

void batch_norm(const KernelArgs& a) {
  const NormSchedule& sc = schedule_of<NormSchedule>(a.step);
  const bool nhwc = sc.nhwc;
  const Dims4 d = dims4(a.step.input_shapes[0], nhwc);
  const double eps = sc.eps;
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

namespace {

// Per-channel sums over the pixels of each image, NHWC: sums[img * C + c] = sum over pixels of
// f(x, img, c). Parallel over (image, pixel range) parts with fp64 partials per part; within a part
// channels are accumulated in fp32 over runs of kPixelRun pixels (contiguous, vectorised).
template <class F>
void nhwc_channel_sums(const float* x, ThreadPool& pool, const Dims4& d, F f, double* sums) {
  constexpr int64_t kPixelRun = 64;
  const int64_t hw = d.h * d.w;
  const int64_t parts_per_image = std::clamp<int64_t>(hw / 256, 1, 4 * pool.threads());
  const int64_t parts = d.n * parts_per_image;
  double* partial = reinterpret_cast<double*>(
      pool.scratch(0, ThreadPool::kKernel, static_cast<size_t>(2 * parts * d.c)));
  pool.parallel_for_tid(parts, [&](int tid, int64_t t0, int64_t t1) {
    float* acc = pool.scratch(tid, ThreadPool::kTile, static_cast<size_t>(d.c));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t img = t / parts_per_image, part = t % parts_per_image;
      const int64_t p0 = hw * part / parts_per_image, p1 = hw * (part + 1) / parts_per_image;
      double* out = partial + t * d.c;
      std::fill(out, out + d.c, 0.0);
      for (int64_t r0 = p0; r0 < p1; r0 += kPixelRun) {
        std::fill(acc, acc + d.c, 0.0f);
        for (int64_t p = r0; p < std::min(p1, r0 + kPixelRun); ++p) {
          const float* px = x + (img * hw + p) * d.c;
          for (int64_t c = 0; c < d.c; ++c) acc[c] += f(px[c], img, c);
        }
        for (int64_t c = 0; c < d.c; ++c) out[c] += acc[c];
      }
    }
  });
  std::fill(sums, sums + d.n * d.c, 0.0);
  for (int64_t t = 0; t < parts; ++t) {
    double* dst = sums + (t / parts_per_image) * d.c;
    for (int64_t c = 0; c < d.c; ++c) dst[c] += partial[t * d.c + c];
  }
}

}  // namespace

void group_norm(const KernelArgs& a) {
  const NormSchedule& sc = schedule_of<NormSchedule>(a.step);
  const bool nhwc = sc.nhwc;
  const Dims4 d = dims4(a.step.input_shapes[0], nhwc);
  const int64_t groups = sc.groups;
  const double eps = sc.eps;
  const int64_t cg = d.c / groups, hw = d.h * d.w;
  const double count = static_cast<double>(cg * hw);
  const float* x = a.in[0];
  const float* gamma = a.in[1];
  const float* beta = a.in[2];
  // Scratch: fp64 per-channel sums and sums of squares (n*c each) and group means (n*groups)
  // first, for alignment; then per (image, channel) floats: multiplier, offset, group mean.
  const int64_t nc = d.n * d.c;
  double* sum =
      reinterpret_cast<double*>(a.pool.scratch(a.pool.current_thread(), ThreadPool::kKernel2,
                                               static_cast<size_t>(7 * nc + 2 * d.n * groups)));
  double* ss = sum + nc;
  double* mean = ss + nc;  // per (image, group)
  float* mul = reinterpret_cast<float*>(mean + d.n * groups);
  float* add = mul + nc;
  float* chan_mean = add + nc;  // the group's mean, per (image, channel)
  auto set_affine = [&](int64_t img, int64_t g, double mean, double ss) {
    const double rstd = 1.0 / std::sqrt(ss / count + eps);
    for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
      const double m = gamma[c] * rstd;
      mul[img * d.c + c] = static_cast<float>(m);
      add[img * d.c + c] = static_cast<float>(beta[c] - mean * m);
    }
  };
  if (nhwc) {
    nhwc_channel_sums(
        x, a.pool, d, [](float v, int64_t, int64_t) { return v; }, sum);
    for (int64_t img = 0; img < d.n; ++img) {
      for (int64_t g = 0; g < groups; ++g) {
        double s = 0;
        for (int64_t c = g * cg; c < (g + 1) * cg; ++c) s += sum[img * d.c + c];
        mean[img * groups + g] = s / count;
        for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
          chan_mean[img * d.c + c] = static_cast<float>(s / count);
        }
      }
    }
    const float* cm = chan_mean;
    const int64_t channels = d.c;
    nhwc_channel_sums(
        x, a.pool, d,
        [cm, channels](float v, int64_t img, int64_t c) {
          const float dv = v - cm[img * channels + c];
          return dv * dv;
        },
        ss);
    for (int64_t img = 0; img < d.n; ++img) {
      for (int64_t g = 0; g < groups; ++g) {
        double q = 0;
        for (int64_t c = g * cg; c < (g + 1) * cg; ++c) q += ss[img * d.c + c];
        set_affine(img, g, mean[img * groups + g], q);
      }
    }
  } else {
    const NormRowKernels& k = row_kernels();
    a.pool.parallel_for(d.n * groups, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t img = t / groups, g = t % groups;
        const float* base = x + (img * d.c + g * cg) * hw;
        const double mean = k.sum(base, cg * hw) / count;
        set_affine(img, g, mean, k.sum_sq_dev(base, cg * hw, static_cast<float>(mean)));
      }
    });
  }
  channel_affine(a, nhwc, d, mul, add, d.c);
}

namespace {
// Last-dim norms: rows of length dim; `rms` selects RMSNorm (no centring, no beta).
void row_norm(const KernelArgs& a, bool rms) {
  const int64_t dim = a.step.input_shapes[0].back();
  const int64_t rows = ir::num_elements(a.step.input_shapes[0]) / std::max<int64_t>(dim, 1);
  const double eps = schedule_of<NormSchedule>(a.step).eps;
  const float* gamma = a.in[1];
  const float* beta = rms ? nullptr : a.in[2];
  const Epilogue epi(a.step, a.in, a.out);
  const NormRowKernels& k = row_kernels();
  a.pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = a.in[0] + r * dim;
      float* y = a.out + r * dim;
      if (rms) {
        const float s = static_cast<float>(1.0 / std::sqrt(k.sum_sq(x, dim) / dim + eps));
        k.rms_row(x, s, gamma, y, dim);
      } else {
        const double mean = k.sum(x, dim) / dim;
        const double ss = k.sum_sq_dev(x, dim, static_cast<float>(mean));
        const double rstd = 1.0 / std::sqrt(ss / dim + eps);
        k.layer_row(x, static_cast<float>(mean), static_cast<float>(rstd), gamma, beta, y, dim);
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
  const int64_t axis = schedule_of<NormSchedule>(a.step).axis;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t len = s[static_cast<size_t>(axis)];
  const Epilogue epi(a.step, a.in, a.out);
  if (inner == 1) {
    const NormRowKernels& k = row_kernels();
    a.pool.parallel_for(outer, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* x = a.in[0] + r * len;
        float* y = a.out + r * len;
        const float mx = k.row_max(x, len);
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
