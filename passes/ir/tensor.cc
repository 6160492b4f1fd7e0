#include "passes/ir/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "base/error.h"

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
      // Irwin-Hall: the sum of four 16-bit uniforms from one hash, rescaled to unit variance.
      // Approximately normal (bounded at +-2*sqrt(3) sigma) and ~15x cheaper than Box-Muller,
      // which matters when SDXL's 2.6 B weights are made at every run.
      for (int64_t i = 0; i < count; ++i) {
        const uint64_t bits = mix(stream + static_cast<uint64_t>(first + i));
        const double sum = static_cast<double>((bits & 0xFFFF) + ((bits >> 16) & 0xFFFF) +
                                               ((bits >> 32) & 0xFFFF) + (bits >> 48)) +
                           2.0;  // + 4 * 0.5: the midpoint of each 16-bit bucket
        const double z = (sum * (1.0 / 65536.0) - 2.0) * 1.7320508075688772;
        out[i] = static_cast<float>(init.a + init.b * z);
      }
      return;
  }
}

namespace {

std::shared_ptr<const std::vector<float>> generate_all(const ConstantInit& init, int64_t count) {
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

struct CacheKey {
  int kind;
  float a, b;
  uint64_t seed;
  int64_t count;
  auto operator<=>(const CacheKey&) const = default;
};

}  // namespace

std::shared_ptr<const std::vector<float>> materialize(const ConstantInit& init, int64_t count) {
  // Small constants are cheaper to make than to look up.
  const int64_t kCacheThreshold = 4096;
  if (count < kCacheThreshold || init.kind == ConstantInit::Kind::fill) {
    return generate_all(init, count);
  }
  static std::mutex mutex;
  static std::map<CacheKey, std::weak_ptr<const std::vector<float>>> cache;
  const CacheKey key{static_cast<int>(init.kind), init.a, init.b, init.seed, count};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) {
      if (auto alive = it->second.lock()) return alive;
    }
  }
  auto values = generate_all(init, count);
  std::lock_guard<std::mutex> lock(mutex);
  // Drop entries whose data is gone so the map does not grow without bound.
  std::erase_if(cache, [](const auto& entry) { return entry.second.expired(); });
  cache[key] = values;
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
