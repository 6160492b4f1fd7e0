#include "passes/ir/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "passes/ir/error.h"

namespace cuvil::ir {

Tensor::Tensor(Shape s, DType t)
    : shape(std::move(s)), dtype(t), data(static_cast<size_t>(num_elements(shape)), 0.0f) {}

Tensor::Tensor(Shape s, std::vector<float> values, DType t)
    : shape(std::move(s)), dtype(t), data(std::move(values)) {
  CUVIL_CHECK(static_cast<int64_t>(data.size()) == num_elements(shape),
              "tensor data size does not match shape " + to_string(shape));
}

namespace {

// SplitMix64 finaliser: a counter-based generator, so element i never depends on element i-1.
inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline double unit(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace

void generate(const ConstantInit& init, int64_t first, int64_t count, float* out) {
  const uint64_t stream = mix(init.seed ^ 0xC0FFEE1234567ull);
  switch (init.kind) {
    case ConstantInit::Kind::fill:
      for (int64_t i = 0; i < count; ++i) out[i] = init.a;
      return;
    case ConstantInit::Kind::uniform:
      for (int64_t i = 0; i < count; ++i) {
        const double u = unit(mix(stream + static_cast<uint64_t>(first + i)));
        out[i] = static_cast<float>(init.a + (init.b - init.a) * u);
      }
      return;
    case ConstantInit::Kind::normal:
      // Box-Muller on two independent uniforms drawn from the element's own counter.
      for (int64_t i = 0; i < count; ++i) {
        const uint64_t c = static_cast<uint64_t>(first + i) * 2;
        const double u1 = unit(mix(stream + c)) + 0x1.0p-54;
        const double u2 = unit(mix(stream + c + 1));
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
        out[i] = static_cast<float>(init.a + init.b * z);
      }
      return;
  }
}

std::shared_ptr<const std::vector<float>> materialize(const ConstantInit& init, int64_t count) {
  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(count));
  // Large weights (SDXL holds 2.6 B parameters) are generated on every core.
  const int64_t kParallelThreshold = 1 << 20;
  const unsigned hw = std::thread::hardware_concurrency();
  const int64_t workers = count < kParallelThreshold ? 1 : std::max<int64_t>(1, hw);
  std::vector<std::thread> threads;
  const int64_t chunk = (count + workers - 1) / workers;
  for (int64_t w = 0; w < workers; ++w) {
    const int64_t begin = w * chunk;
    const int64_t end = std::min(count, begin + chunk);
    if (begin >= end) break;
    float* dst = values->data() + begin;
    if (workers == 1) {
      generate(init, begin, end - begin, dst);
    } else {
      threads.emplace_back([&init, begin, end, dst] { generate(init, begin, end - begin, dst); });
    }
  }
  for (auto& t : threads) t.join();
  return values;
}

double max_relative_error(const Tensor& actual, const Tensor& reference) {
  CUVIL_CHECK(actual.shape == reference.shape, "comparing tensors of shapes " +
                                                   to_string(actual.shape) + " and " +
                                                   to_string(reference.shape));
  double sum_sq = 0.0;
  for (float r : reference.data) sum_sq += static_cast<double>(r) * r;
  const double rms = reference.data.empty() ? 0.0 : std::sqrt(sum_sq / reference.data.size());
  double worst = 0.0;
  for (size_t i = 0; i < actual.data.size(); ++i) {
    const double a = actual.data[i];
    const double r = reference.data[i];
    if (!std::isfinite(a) || !std::isfinite(r)) return std::numeric_limits<double>::infinity();
    const double denom = std::max({std::fabs(r), rms, 1e-30});
    worst = std::max(worst, std::fabs(a - r) / denom);
  }
  return worst;
}

}  // namespace cuvil::ir
