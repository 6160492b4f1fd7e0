// Normalisations: batch norm (inference, running statistics), group norm over (C/groups, H, W),
// and layer / RMS norm over the last dimension. Statistics are biased (divide by the count), in
// double, two-pass.
#include <cmath>

#include "base/error.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

namespace {

double eps_attr(const ir::Node& node) {
  return node.attrs.get_float("eps", 1e-5);
}

}  // namespace

// inputs (x, scale, bias, mean, var)
void run_batch_norm(const OpArgs& a) {
  const Dims4 x = dims4(a.in[0].shape, layout_attr(a.node));
  const double eps = eps_attr(a.node);
  const float* scale = a.in[1].data;
  const float* bias = a.in[2].data;
  const float* mean = a.in[3].data;
  const float* var = a.in[4].data;
  for (int64_t c = 0; c < x.c; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
    for (int64_t n = 0; n < x.n; ++n) {
      for (int64_t h = 0; h < x.h; ++h) {
        for (int64_t w = 0; w < x.w; ++w) {
          const int64_t i = x.at(n, c, h, w);
          a.out[i] = static_cast<float>(
              (a.in[0].data[i] - static_cast<double>(mean[c])) * inv_std * scale[c] + bias[c]);
        }
      }
    }
  }
}

// inputs (x, gamma, beta); attr groups (default 32)
void run_group_norm(const OpArgs& a) {
  const Dims4 x = dims4(a.in[0].shape, layout_attr(a.node));
  const double eps = eps_attr(a.node);
  const int64_t groups = a.node.attrs.get_int("groups", 32);
  const int64_t per_group = x.c / groups;
  const float* in = a.in[0].data;
  const float* gamma = a.in[1].data;
  const float* beta = a.in[2].data;
  const double count = static_cast<double>(per_group * x.h * x.w);
  for (int64_t n = 0; n < x.n; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t c0 = g * per_group, c1 = c0 + per_group;
      double sum = 0.0;
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t h = 0; h < x.h; ++h) {
          for (int64_t w = 0; w < x.w; ++w) sum += in[x.at(n, c, h, w)];
        }
      }
      const double mean = sum / count;
      double sq = 0.0;
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t h = 0; h < x.h; ++h) {
          for (int64_t w = 0; w < x.w; ++w) {
            const double d = in[x.at(n, c, h, w)] - mean;
            sq += d * d;
          }
        }
      }
      const double inv_std = 1.0 / std::sqrt(sq / count + eps);
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t h = 0; h < x.h; ++h) {
          for (int64_t w = 0; w < x.w; ++w) {
            const int64_t i = x.at(n, c, h, w);
            a.out[i] = static_cast<float>((in[i] - mean) * inv_std * gamma[c] + beta[c]);
          }
        }
      }
    }
  }
}

// inputs (x[..., D], gamma[D], beta[D])
void run_layer_norm(const OpArgs& a) {
  const int64_t d = a.in[0].shape.back();
  const int64_t rows = a.in[0].numel() / d;
  const double eps = eps_attr(a.node);
  const float* gamma = a.in[1].data;
  const float* beta = a.in[2].data;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.in[0].data + r * d;
    float* y = a.out + r * d;
    double sum = 0.0;
    for (int64_t i = 0; i < d; ++i) sum += x[i];
    const double mean = sum / static_cast<double>(d);
    double sq = 0.0;
    for (int64_t i = 0; i < d; ++i) sq += (x[i] - mean) * (x[i] - mean);
    const double inv_std = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
    for (int64_t i = 0; i < d; ++i) {
      y[i] = static_cast<float>((x[i] - mean) * inv_std * gamma[i] + beta[i]);
    }
  }
}

// inputs (x[..., D], gamma[D]): x / sqrt(mean(x^2) + eps) * gamma
void run_rms_norm(const OpArgs& a) {
  const int64_t d = a.in[0].shape.back();
  const int64_t rows = a.in[0].numel() / d;
  const double eps = eps_attr(a.node);
  const float* gamma = a.in[1].data;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.in[0].data + r * d;
    float* y = a.out + r * d;
    double sq = 0.0;
    for (int64_t i = 0; i < d; ++i) sq += static_cast<double>(x[i]) * x[i];
    const double inv_rms = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
    for (int64_t i = 0; i < d; ++i) y[i] = static_cast<float>(x[i] * inv_rms * gamma[i]);
  }
}

}  // namespace cuvil::runtime::reference
