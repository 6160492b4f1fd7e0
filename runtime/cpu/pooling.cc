// Pooling and nearest upsampling, NCHW and NHWC (vectorises over channels); max/avg pooling
// also nchw16c.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/kernels.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

// What the pooling and upsampling kernels read of their step's attributes, once at lowering.
struct PoolSchedule {
  bool blocked = false, nhwc = false;  // layout nchw16c, layout nhwc
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, pad{0, 0};
  bool include_pad = true;  // avg_pool2d's count_include_pad
  int64_t scale = 2;        // upsample_nearest2d
};

}  // namespace

std::shared_ptr<const void> pool_schedule(const Step& step) {
  auto s = std::make_shared<PoolSchedule>();
  s->blocked = is_nchw16c(step);
  s->nhwc = is_nhwc(step);
  s->kernel = attr_pair(step, "kernel", 1);
  s->stride = attr_pair(step, "stride", 1);
  s->pad = attr_pair(step, "pad", 0);
  s->include_pad = step.attrs.get_int("count_include_pad", 1) != 0;
  s->scale = step.attrs.get_int("scale", 2);
  return s;
}

namespace {

// A max that keeps a NaN from either side, as the reference and PyTorch do (std::max would let
// a later tap replace it, and the -inf start drop one).
inline float max_keep_nan(float acc, float v) {
  return v > acc || v != v ? v : acc;
}

// Channels one NHWC output pixel pools at a time, as kPoolVectors vectors of 16 (GCC's vector
// extension: whatever the build's instruction set, the partial results stay in registers while
// the window's taps are read; left to itself GCC vectorised across the taps, with gathers).
// Never passed by value: without AVX-512 (the portable build) that changes the ABI (-Wpsabi).
using PoolVector = float __attribute__((vector_size(64)));
constexpr int64_t kPoolLanes = 16, kPoolVectors = 4, kPoolChannels = kPoolLanes * kPoolVectors;

// out[0, kVectors * kPoolLanes) = the max (or the sum) over the taps of those channels, from
// channel `first` of each tap on.
template <bool kMax, int64_t kVectors>
inline void pool_vectors(const float* const* taps, int64_t count, int64_t first, float* out) {
  PoolVector acc[kVectors];
  const float init = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
  for (PoolVector& v : acc) v = PoolVector{} + init;
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t i = 0; i < kVectors; ++i) {
      PoolVector v;
      std::memcpy(&v, taps[t] + first + i * kPoolLanes, sizeof v);
      if constexpr (kMax) {
        acc[i] = ((v > acc[i]) | (v != v)) ? v : acc[i];  // max_keep_nan per lane
      } else {
        acc[i] += v;
      }
    }
  }
  std::memcpy(out, acc, sizeof acc);
}

// Channels [0, c) of one output pixel: kPoolChannels at a time, then vector by vector, then
// the last c % 16 one by one.
template <bool kMax>
void pool_pixel(const float* const* taps, int64_t count, int64_t c, float* out) {
  int64_t c0 = 0;
  for (; c0 + kPoolChannels <= c; c0 += kPoolChannels) {
    pool_vectors<kMax, kPoolVectors>(taps, count, c0, out + c0);
  }
  for (; c0 + kPoolLanes <= c; c0 += kPoolLanes) pool_vectors<kMax, 1>(taps, count, c0, out + c0);
  for (; c0 < c; ++c0) {
    float acc = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (int64_t t = 0; t < count; ++t) {
      acc = kMax ? max_keep_nan(acc, taps[t][c0]) : acc + taps[t][c0];
    }
    out[c0] = acc;
  }
}

template <bool kMax>
void pool2d(const KernelArgs& a) {
  // nchw16c pools each lane alike: the NHWC loops over 16-channel images.
  const PoolSchedule& sc = schedule_of<PoolSchedule>(a.step);
  const bool blocked = sc.blocked, nhwc = blocked || sc.nhwc;
  const Dims4 x =
      blocked ? blocked_as_nhwc(a.step.input_shapes[0]) : dims4(a.step.input_shapes[0], nhwc);
  const Dims4 y = blocked ? blocked_as_nhwc(a.step.output_shape) : dims4(a.step.output_shape, nhwc);
  const std::array<int64_t, 2>& k = sc.kernel;
  const std::array<int64_t, 2>& st = sc.stride;
  const std::array<int64_t, 2>& pd = sc.pad;
  const float inv_area = 1.0f / static_cast<float>(k[0] * k[1]);
  // count_include_pad 0: divide by the taps inside the input (windows at borders have fewer).
  const bool include_pad = sc.include_pad;
  auto scale_of = [&](int64_t taps) {
    return include_pad ? inv_area : 1.0f / static_cast<float>(std::max<int64_t>(1, taps));
  };
  const float init = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
  const Epilogue epi(a.step, a.in, a.out);
  const float* in = a.in[0];
  if (nhwc) {
    // One output row (all its pixels, all channels) per task; per pixel, the window's taps inside
    // the input are listed once and read kPoolChannels channels at a time.
    a.pool.parallel_for(y.n * y.h, [&](int64_t r0, int64_t r1) {
      std::vector<const float*> taps(static_cast<size_t>(k[0] * k[1]));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t img = r / y.h, oy = r % y.h;
        for (int64_t ox = 0; ox < y.w; ++ox) {
          int64_t count = 0;
          for (int64_t ki = 0; ki < k[0]; ++ki) {
            const int64_t iy = oy * st[0] - pd[0] + ki;
            if (iy < 0 || iy >= x.h) continue;
            for (int64_t kj = 0; kj < k[1]; ++kj) {
              const int64_t ix = ox * st[1] - pd[1] + kj;
              if (ix < 0 || ix >= x.w) continue;
              taps[static_cast<size_t>(count++)] = in + ((img * x.h + iy) * x.w + ix) * x.c;
            }
          }
          float* o = a.out + ((img * y.h + oy) * y.w + ox) * x.c;
          pool_pixel<kMax>(taps.data(), count, x.c, o);
          if (!kMax) {
            const float scale = scale_of(count);
            for (int64_t c = 0; c < x.c; ++c) o[c] *= scale;
          }
        }
        if (!epi.empty()) epi.apply(a.out + (img * y.h + oy) * y.w * x.c, y.w * x.c);
      }
    });
    return;
  }
  a.pool.parallel_for(x.n * x.c, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* plane = in + p * x.h * x.w;
      float* o = a.out + p * y.h * y.w;
      for (int64_t oy = 0; oy < y.h; ++oy) {
        for (int64_t ox = 0; ox < y.w; ++ox) {
          float acc = init;
          int64_t taps = 0;
          for (int64_t ki = 0; ki < k[0]; ++ki) {
            const int64_t iy = oy * st[0] - pd[0] + ki;
            if (iy < 0 || iy >= x.h) continue;
            for (int64_t kj = 0; kj < k[1]; ++kj) {
              const int64_t ix = ox * st[1] - pd[1] + kj;
              if (ix < 0 || ix >= x.w) continue;
              const float v = plane[iy * x.w + ix];
              acc = kMax ? max_keep_nan(acc, v) : acc + v;
              ++taps;
            }
          }
          o[oy * y.w + ox] = kMax ? acc : acc * scale_of(taps);
        }
      }
      if (!epi.empty()) epi.apply(o, y.h * y.w);
    }
  });
}

}  // namespace

void max_pool2d(const KernelArgs& a) {
  pool2d<true>(a);
}
void avg_pool2d(const KernelArgs& a) {
  pool2d<false>(a);
}

void global_avg_pool(const KernelArgs& a) {
  const bool nhwc = schedule_of<PoolSchedule>(a.step).nhwc;
  const Dims4 x = dims4(a.step.input_shapes[0], nhwc);
  const int64_t hw = x.h * x.w;
  const float* in = a.in[0];
  if (nhwc) {
    // Per (image, channel block): sums over pixels in fp64, channels innermost.
    constexpr int64_t kCb = 64;
    const int64_t cblocks = (x.c + kCb - 1) / kCb;
    a.pool.parallel_for(x.n * cblocks, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t img = t / cblocks, c0 = (t % cblocks) * kCb;
        const int64_t nc = std::min(kCb, x.c - c0);
        double acc[kCb] = {};
        for (int64_t p = 0; p < hw; ++p) {
          const float* row = in + (img * hw + p) * x.c + c0;
          for (int64_t c = 0; c < nc; ++c) acc[c] += row[c];
        }
        for (int64_t c = 0; c < nc; ++c) {
          a.out[img * x.c + c0 + c] = static_cast<float>(acc[c] / static_cast<double>(hw));
        }
      }
    });
  } else {
    a.pool.parallel_for(x.n * x.c, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        a.out[p] = static_cast<float>(sum_f64(in + p * hw, hw) / static_cast<double>(hw));
      }
    });
  }
  Epilogue(a.step, a.in, a.out).apply_all(a.pool);
}

void upsample_nearest2d(const KernelArgs& a) {
  const PoolSchedule& sc = schedule_of<PoolSchedule>(a.step);
  const bool nhwc = sc.nhwc;
  const Dims4 x = dims4(a.step.input_shapes[0], nhwc);
  const Dims4 y = dims4(a.step.output_shape, nhwc);
  const int64_t s = sc.scale;
  const Epilogue epi(a.step, a.in, a.out);
  const float* in = a.in[0];
  if (nhwc) {
    a.pool.parallel_for(y.n * y.h, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t img = r / y.h, oy = r % y.h;
        const float* src = in + (img * x.h + oy / s) * x.w * x.c;
        float* o = a.out + r * y.w * x.c;
        for (int64_t ox = 0; ox < y.w; ++ox) {
          std::memcpy(o + ox * x.c, src + (ox / s) * x.c, static_cast<size_t>(x.c) * sizeof(float));
        }
        if (!epi.empty()) epi.apply(o, y.w * x.c);
      }
    });
    return;
  }
  a.pool.parallel_for(y.n * x.c * y.h, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / y.h, oy = r % y.h;
      const float* src = in + (plane * x.h + oy / s) * x.w;
      float* o = a.out + r * y.w;
      for (int64_t ox = 0; ox < y.w; ++ox) o[ox] = src[ox / s];
      if (!epi.empty()) epi.apply(o, y.w);
    }
  });
}

}  // namespace cuvil::runtime::cpu
