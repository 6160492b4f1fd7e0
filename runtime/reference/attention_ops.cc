// Softmax over any axis, scaled dot-product attention (causal end-aligned, grouped-query) and
// rotary position embedding (rotate-half convention).
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "runtime/reference/ops.h"

namespace cuvil::runtime::reference {

namespace {

// Numerically stable softmax of scores[0, n) in place.
void softmax_in_place(double* scores, int64_t n) {
  double peak = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j) peak = std::max(peak, scores[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - peak);
    sum += scores[j];
  }
  for (int64_t j = 0; j < n; ++j) scores[j] /= sum;
}

}  // namespace

void run_softmax(const OpArgs& a) {
  const ir::Shape& shape = a.in[0].shape;
  const size_t axis =
      static_cast<size_t>(normalize_axis(a.node.attrs.get_int("axis", -1), shape.size()));
  const int64_t len = shape[axis];
  const int64_t outer = ir::num_elements(ir::Shape(shape.begin(), shape.begin() + axis));
  const int64_t inner = ir::num_elements(ir::Shape(shape.begin() + axis + 1, shape.end()));
  std::vector<double> row(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      for (int64_t j = 0; j < len; ++j)
        row[static_cast<size_t>(j)] = a.in[0].data[base + j * inner];
      softmax_in_place(row.data(), len);
      for (int64_t j = 0; j < len; ++j)
        a.out[base + j * inner] = static_cast<float>(row[static_cast<size_t>(j)]);
    }
  }
}

// q[B, Hq, Sq, D], k[B, Hkv, Skv, D], v[B, Hkv, Skv, Dv] -> [B, Hq, Sq, Dv]
void run_sdpa(const OpArgs& a) {
  const View& q = a.in[0];
  const View& k = a.in[1];
  const View& v = a.in[2];
  const int64_t batch = q.shape[0], hq = q.shape[1], sq = q.shape[2], d = q.shape[3];
  const int64_t hkv = k.shape[1], skv = k.shape[2], dv = v.shape[3];
  const bool causal = a.node.attrs.get_int("causal", 0) != 0;
  const double scale = a.node.attrs.get_float("scale", 1.0 / std::sqrt(static_cast<double>(d)));
  const int64_t heads_per_kv = hq / hkv;
  std::vector<double> scores(static_cast<size_t>(skv));
  std::vector<double> acc(static_cast<size_t>(dv));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kvh = h / heads_per_kv;
      const float* qh = q.data + (b * hq + h) * sq * d;
      const float* kh = k.data + (b * hkv + kvh) * skv * d;
      const float* vh = v.data + (b * hkv + kvh) * skv * dv;
      for (int64_t i = 0; i < sq; ++i) {
        // Causal queries are aligned to the end of the keys: query i sees keys j <= i + Skv - Sq.
        const int64_t visible = causal ? i + (skv - sq) + 1 : skv;
        for (int64_t j = 0; j < visible; ++j) {
          double dot = 0.0;
          for (int64_t t = 0; t < d; ++t) dot += static_cast<double>(qh[i * d + t]) * kh[j * d + t];
          scores[static_cast<size_t>(j)] = dot * scale;
        }
        softmax_in_place(scores.data(), visible);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < visible; ++j) {
          for (int64_t t = 0; t < dv; ++t)
            acc[static_cast<size_t>(t)] += scores[static_cast<size_t>(j)] * vh[j * dv + t];
        }
        float* out = a.out + ((b * hq + h) * sq + i) * dv;
        for (int64_t t = 0; t < dv; ++t) out[t] = static_cast<float>(acc[static_cast<size_t>(t)]);
      }
    }
  }
}

// x[B, H, S, D]: for d < D/2, angle = (pos_offset + s) * theta^(-2d/D);
// out[d] = x[d] cos - x[d + D/2] sin, out[d + D/2] = x[d + D/2] cos + x[d] sin.
void run_rope(const OpArgs& a) {
  const ir::Shape& shape = a.in[0].shape;
  const int64_t rows = shape[0] * shape[1], seq = shape[2], dim = shape[3], half = dim / 2;
  const double theta = a.node.attrs.get_float("theta", 10000.0);
  const int64_t pos_offset = a.node.attrs.get_int("pos_offset", 0);
  std::vector<double> freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    freq[static_cast<size_t>(i)] =
        std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t s = 0; s < seq; ++s) {
      const float* x = a.in[0].data + (r * seq + s) * dim;
      float* y = a.out + (r * seq + s) * dim;
      const double pos = static_cast<double>(pos_offset + s);
      for (int64_t i = 0; i < half; ++i) {
        const double angle = pos * freq[static_cast<size_t>(i)];
        const double c = std::cos(angle), sn = std::sin(angle);
        const double x0 = x[i], x1 = x[i + half];
        y[i] = static_cast<float>(x0 * c - x1 * sn);
        y[i + half] = static_cast<float>(x1 * c + x0 * sn);
      }
    }
  }
}

}  // namespace cuvil::runtime::reference
